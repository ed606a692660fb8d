"""The data-driven default for a radius B when the user gives none.

Cesa-Bianchi et al.'s Theorem 12 and Hazan & Koren's theorems assume |y| <= B and compare with the
predictors ||w|| <= B; training labels are free in the limited-attribute setting, so the default B is
the largest |y| seen so far (it only grows, and the ball with it). A step size derived from it is recomputed as
it grows. Neither has one value over a run: the algorithm's attribute holds ``RUNNING``, which it accepts back.
"""

from __future__ import annotations

from typing import Final

from learner.algorithms.base import ParamError

RUNNING: Final = "running"


def given_or_running(value: float | str | None) -> float | None:
    """A parameter given as a number, or None for its running default (not given, or ``RUNNING``)."""
    return None if value is None or value == RUNNING else float(value)


class LabelBound:
    """A radius B: fixed when the user gave one, else the running maximum of |y|."""

    def __init__(self, radius: float | None) -> None:
        self.fixed = radius is not None
        self.value = float(radius) if radius is not None else 0.0
        if self.fixed and self.value <= 0:
            raise ParamError(f"the radius must be positive, got {radius}")

    def see(self, y: float) -> float:
        if not self.fixed:
            self.value = max(self.value, abs(float(y)))
        return self.value
