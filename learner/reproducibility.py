"""The same seed and parameters give the same weights: bit for bit on one floating-point platform, to a stated
tolerance across platforms.

A run is deterministic for its seed and parameters, but its last bits depend on the machine's arithmetic: NumPy
dispatches its loops on the CPU's SIMD level, and OpenBLAS (built with ``DYNAMIC_ARCH``, as NumPy's and SciPy's wheels
are) picks a kernel for the CPU, and two kernels may add a dot product's terms in another order. Runs recorded on one
CPU and replayed on another then differ by a few units in the last place (ulps) of their weights.

``float_platform`` names what decides those bits (the machine, NumPy's version and SIMD level, each BLAS library's
version and kernel architecture, as threadpoolctl reports them). ``compare_floats`` compares bit for bit when the
recording's platform is this one, and within ``RELATIVE_TOLERANCE`` of the largest recorded value otherwise, and says
which comparison ran.

Why 1e-12: the pinned runs of every algorithm (300 examples each), replayed under OpenBLAS's Sandybridge, Prescott and
Katmai kernels against their Haswell recording, differed by at most 1.7e-15 of the largest weight (about 8 ulps of it;
tests/learner/algorithms/test_pinned_weights.py). 1e-12 leaves a factor of about 600 for longer runs and other CPUs,
and is still far below what any change to an algorithm's arithmetic does: a step size changed by one part in 1e10
moved the same runs' weights by 2.6e-11 to 1.2e-10 of the largest weight (the ten pinned runs that take ``eta``).
"""

from __future__ import annotations

import importlib
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

RELATIVE_TOLERANCE = 1e-12
"""Across floating-point platforms, values agree when they differ by at most this fraction of the largest of them."""


def _numpy_simd() -> str:
    """NumPy's dispatched SIMD targets this CPU runs (the highest decides which loops run)."""
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")  # NumPy 2
    except ImportError:  # pragma: no cover - NumPy 1.26
        umath = importlib.import_module("numpy.core._multiarray_umath")
    features: dict[str, bool] = getattr(umath, "__cpu_features__", {})
    baseline = list(getattr(umath, "__cpu_baseline__", []))
    dispatched = [target for target in getattr(umath, "__cpu_dispatch__", []) if features.get(target)]
    return " ".join(baseline + dispatched) or "unknown"


def _blas_libraries() -> str:
    """Every BLAS library the algorithms may call, with its version and the kernel it chose for this CPU."""
    from threadpoolctl import threadpool_info

    try:  # SciPy loads a BLAS of its own (scikit-learn's solvers call it); loaded here so that it is listed
        import scipy.linalg  # noqa: F401
    except ImportError:  # pragma: no cover - the learner's extra installs SciPy
        pass
    found = {f"{lib.get('internal_api')} {lib.get('version')} {lib.get('architecture')}"
             for lib in threadpool_info() if lib.get("user_api") == "blas"}
    return "; ".join(sorted(found)) or "none found"


def float_platform() -> dict[str, str]:
    """What decides the last bits of a run's arithmetic on this machine, to record beside results pinned bit for bit."""
    return {"machine": platform.machine(), "numpy": np.__version__, "numpy_simd": _numpy_simd(),
            "blas": _blas_libraries()}


@dataclass(frozen=True)
class Agreement:
    """How two lists of floats compared: bit for bit, or within ``RELATIVE_TOLERANCE`` of the largest value."""

    exact: bool
    """True: the recording's platform is this one, so bit-identical values were asked for."""
    largest_difference: float
    """The largest absolute difference, as a fraction of the largest absolute recorded value (0.0 when identical)."""
    holds: bool
    recorded_on: Mapping[str, str] | None
    this_platform: Mapping[str, str]

    def describe(self) -> str:
        if self.exact:
            return f"bit for bit (recorded on this platform: {_platform_text(self.this_platform)})"
        return (f"within {RELATIVE_TOLERANCE:g} of the largest value (recorded on "
                f"{_platform_text(self.recorded_on) if self.recorded_on else 'an unrecorded platform'}; this one is "
                f"{_platform_text(self.this_platform)}); largest difference {self.largest_difference:.3g}")


def _platform_text(found: Mapping[str, str]) -> str:
    return ", ".join(f"{key} {value}" for key, value in found.items())


def compare_floats(ours: Sequence[float] | np.ndarray, recorded: Sequence[float] | np.ndarray,
                   recorded_on: Mapping[str, str] | None, *, here: Mapping[str, str] | None = None) -> Agreement:
    """Compare ``ours`` with values recorded on the platform ``recorded_on`` (``float_platform()`` there): bit for bit
    when it is this platform (``here``, default ``float_platform()``), within ``RELATIVE_TOLERANCE`` of the largest
    absolute recorded value otherwise. Shapes must match either way."""
    here = dict(here) if here is not None else float_platform()
    exact = recorded_on is not None and dict(recorded_on) == here
    a, b = np.asarray(ours, dtype=float), np.asarray(recorded, dtype=float)
    if a.shape != b.shape:
        return Agreement(exact, float("inf"), False, recorded_on, here)
    if np.array_equal(a, b):
        return Agreement(exact, 0.0, True, recorded_on, here)
    scale = float(np.max(np.abs(b), initial=0.0))
    difference = float(np.max(np.abs(a - b)))
    relative = difference / scale if scale > 0 else float("inf")
    return Agreement(exact, relative, not exact and relative <= RELATIVE_TOLERANCE, recorded_on, here)


def compare_params(ours: Mapping[str, Any], recorded: Mapping[str, Any], recorded_on: Mapping[str, str] | None,
                   *, here: Mapping[str, str] | None = None) -> Agreement:
    """Compare resolved parameters: the same names, equal non-float values, each float as ``compare_floats`` does
    (a step size is compared with itself, not with a radius a thousand times larger)."""
    here = dict(here) if here is not None else float_platform()
    exact = recorded_on is not None and dict(recorded_on) == here
    if set(ours) != set(recorded) or any(
            not isinstance(recorded[name], float) and ours[name] != recorded[name] for name in recorded):
        return Agreement(exact, float("inf"), False, recorded_on, here)
    each = [compare_floats([float(ours[name])], [recorded[name]], recorded_on, here=here)
            for name in sorted(recorded) if isinstance(recorded[name], float)]
    return Agreement(exact, max((e.largest_difference for e in each), default=0.0), all(e.holds for e in each),
                     recorded_on, here)
