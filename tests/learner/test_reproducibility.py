"""Weights pinned on one machine pass on another (``learner/reproducibility.py``): bit for bit on the recording's
floating-point platform, within 1e-12 of the largest weight elsewhere, and a refactoring's real change fails both."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from learner.reproducibility import RELATIVE_TOLERANCE, compare_floats, compare_params, float_platform
from tests.helpers import DATA, ROOT

HERE = float_platform()
ELSEWHERE = {**HERE, "blas": "openblas 0.3.31 SkylakeX", "numpy_simd": "X86_V2 X86_V3 X86_V4"}
WEIGHTS = np.array([-0.9999970123447406, 0.25, 0.0, 3.5e-9, 1.5])


def one_ulp_off(values: np.ndarray) -> np.ndarray:
    return np.nextafter(values, np.inf)


def test_the_recording_platform_asks_for_every_bit() -> None:
    same = compare_floats(WEIGHTS.copy(), WEIGHTS, HERE, here=HERE)
    assert same.exact and same.holds and same.largest_difference == 0.0
    assert same.describe().startswith("bit for bit")
    off = compare_floats(one_ulp_off(WEIGHTS), WEIGHTS, HERE, here=HERE)
    assert off.exact and not off.holds and 0 < off.largest_difference < 1e-15


def test_another_platform_forgives_ulps_but_not_a_real_change() -> None:
    off = compare_floats(one_ulp_off(WEIGHTS), WEIGHTS, ELSEWHERE, here=HERE)
    assert not off.exact and off.holds
    assert "within 1e-12" in off.describe() and "SkylakeX" in off.describe()
    # a step size changed by one part in 1e10 moved the pinned runs' weights by at least 2.6e-11 of the largest
    changed = compare_floats(WEIGHTS * (1 + 2.6e-11), WEIGHTS, ELSEWHERE, here=HERE)
    assert not changed.holds and changed.largest_difference > RELATIVE_TOLERANCE
    assert not compare_floats(WEIGHTS[:4], WEIGHTS, ELSEWHERE, here=HERE).holds
    # an unrecorded platform is another platform: never bit for bit, never looser than the tolerance
    assert compare_floats(one_ulp_off(WEIGHTS), WEIGHTS, None, here=HERE).holds
    assert not compare_floats(WEIGHTS + 1e-9, WEIGHTS, None, here=HERE).holds


def test_parameters_compare_each_float_on_its_own_scale() -> None:
    recorded = {"eta": 1.2345e-4, "radius": 30.0, "lam": "adaptive", "s": 10}
    nudged = {**recorded, "eta": float(np.nextafter(1.2345e-4, 1.0))}
    assert compare_params(nudged, recorded, ELSEWHERE, here=HERE).holds
    assert not compare_params(nudged, recorded, HERE, here=HERE).holds
    # beside a radius of 30, a step size 1e-6 off would pass a tolerance on the largest value; on its own it fails
    assert not compare_params({**recorded, "eta": 1.2345e-4 + 1e-12}, recorded, ELSEWHERE, here=HERE).holds
    assert not compare_params({**recorded, "lam": "given"}, recorded, ELSEWHERE, here=HERE).holds
    assert not compare_params({**recorded, "extra": 1.0}, recorded, ELSEWHERE, here=HERE).holds


def test_the_platform_names_numpy_and_each_blas_kernel() -> None:
    from threadpoolctl import threadpool_info

    assert HERE["numpy"] == np.__version__ and HERE["machine"] == platform.machine()
    kernels = {lib["architecture"] for lib in threadpool_info() if lib["user_api"] == "blas" and "architecture" in lib}
    assert kernels and all(kernel in HERE["blas"] for kernel in kernels)


def _other_kernel(recorded: dict[str, str]) -> str:
    return "Nehalem" if "Prescott" in recorded["blas"] else "Prescott"


# The pinned cases whose weights another kernel changed (ridge and lasso solve with LAPACK, the Ito runs and screening
# take many small products), run again in a process whose OpenBLAS is told to use another CPU's kernel. Only that
# process's environment changes: the suite itself keeps the machine's OpenBLAS settings.
REPLAY = """
import json, sys
from learner.reproducibility import compare_floats, float_platform
from tests.data.pin_weights import run
pinned = json.loads(open(sys.argv[1]).read())
report = {"platform": float_platform(), "cases": []}
for case in pinned["runs"]:
    if case["algorithm"] in ("ridge", "lasso", "ito1", "screening") and case["defaults"] == "practical":
        again = run(case, "practical")
        agreement = compare_floats(again["weights"], case["weights"], pinned["platform"])
        report["cases"].append({"exact": agreement.exact, "holds": agreement.holds,
                                "difference": agreement.largest_difference, "describe": agreement.describe()})
print(json.dumps(report))
"""


@pytest.mark.process
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or "openblas" not in HERE["blas"],
                    reason="OpenBLAS's x86-64 kernels are what another CPU would choose")
def test_the_pinned_weights_hold_under_another_cpus_blas_kernel() -> None:
    pinned = DATA / "pinned_weights.json"
    recorded = json.loads(pinned.read_text())["platform"]
    kernel = _other_kernel(recorded)
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
    done = subprocess.run([sys.executable, "-c", REPLAY, str(pinned)], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=True, timeout=120)
    report = json.loads(done.stdout)
    assert report["platform"]["blas"] != recorded["blas"]  # OpenBLAS names Prescott's kernel "Katmai"
    cases = report["cases"]
    assert len(cases) == 7 and not any(case["exact"] for case in cases)
    assert all(case["holds"] for case in cases), [case["describe"] for case in cases if not case["holds"]]
    # the kernel did change some bits (else this test would show nothing), by far less than the tolerance
    assert any(case["difference"] > 0 for case in cases)
    assert max(case["difference"] for case in cases) < RELATIVE_TOLERANCE / 100
