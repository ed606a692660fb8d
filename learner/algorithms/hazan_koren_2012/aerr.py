"""AERR: Attribute Efficient Ridge Regression — Hazan & Koren (2012), Algorithm 1.

Per example: k indices i_r drawn uniformly (x̃ = (1/k) Σ_r d x[i_r] e_{i_r}), one index j drawn with
p_j = w_j² / ||w||² (φ̃ = ||w||² x[j] / w_j - y), g̃ = φ̃ x̃, then the OGD step v = w - η g̃ projected
onto the L2 ball, w = v · B / max(||v||, B). The output is the average of the iterates.

Choices the paper leaves open (see docs/papers.md):

- Budget: k + 1 attributes per example, k uniform draws and one w-weighted draw, so a local budget of
  57 means k = 56 (the paper's MNIST experiment). Draws are i.i.d. with replacement; a repeated index
  is paid for once and enters the estimates with its multiplicity.
- w_1: line 1 asks w_1 ≠ 0 only so that p is defined. We start at w_1 = 0, where <w, x> = 0 exactly:
  φ̃ = -y and the w-weighted draw is not needed (nor paid for) until w moves. The average is then not
  pulled towards an arbitrary start.
- Scale (the bounds this theorem uses: max ||x||_2, max |y|, ||w*||_2, declared by the oracle). Theorem 3.1
  assumes ||x||_2 <= 1, |y| <= B and compares with ||w*||_2 <= B. B defaults to the declared ||w*||_2 bound,
  widened to max|y| / max||x||_2; η defaults to Theorem 3.1's sqrt(k / (2 d m)) for the data scaled into the
  unit ball, i.e. sqrt(k / (2 d m)) / max||x||_2² on w (``AttributeEfficient``), m the run's examples.
- The theorem's step is a worst-case choice: on the 900 training images of ``mnist-3v5`` (max||x||_2 = 13.9)
  it moves w little within one pass (normalised test MSE about 0.93 at k + 1 = 57); the papers tuned η by
  cross-validation.
- Cost per example is O(k log d), not O(d): w is kept as scale × vector, the projection only changes
  the scale, the average is kept lazily and p is sampled from a sum tree (learner/algorithms/shared/iterates.py).
- The practical default (``defaults = "practical"``, recorded as ``eta = "adaptive"``): the theorem's η above is a
  worst case that barely moves w within one pass on real data; the default step is averaged least squares',
  η = 1/(2R²) with R² measured on the run's own estimates x̃ and g̃, never below the theorem's η
  (``shared.step_sizes.LeastSquaresStep``). ``defaults = "theory"`` takes the theorem's η.
"""

from __future__ import annotations

import math
from typing import Literal

from learner.algorithms.base import Problem
from learner.algorithms.hazan_koren_2012 import PAPER
from learner.algorithms.shared.attribute_efficient import AttributeEfficient
from learner.algorithms.shared.geometry import L2_BALL


def aerr_eta(k: int, d: int, m: int) -> float:
    """Theorem 3.1: η = sqrt(k / (2 d m))."""
    return math.sqrt(k / (2 * d * max(m, 1)))


class AERR(AttributeEfficient):
    """Attribute Efficient Ridge Regression: OGD on the L2 ball with uniform and w²-weighted attribute draws.

    Parameters
    ----------
    B
        radius of the constraint ball on w (the papers' B); default the declared ||w*|| bound, widened to max|y| /
        max||x|| so that the theorem's |y| <= B holds after scaling x into the unit ball
    eta
        step size η; default 'adaptive': averaged least squares' 1/(2R²), R² measured on the run's estimates, never
        below the theorem's η; theory: Theorem 3.1's sqrt(k/(2dm)) / max||x||_2² with k = budget - 1
    """

    id = "aerr"
    name = "AERR (Attribute Efficient Ridge Regression)"
    paper = PAPER
    algorithm = "Algorithm 1"
    geometry = L2_BALL
    # Its x̃ reads the values in select()'s order (``SampledGradient.estimates``): the step's dict is never needed
    takes_paid_row = True

    def __init__(self, problem: Problem, seed: int = 0, *, B: float | None = None,
                 eta: float | Literal["adaptive"] | None = None) -> None:
        super().__init__(problem, seed)
        self.B = B
        k = problem.budget - 1
        _, _, X = self.ball()
        self.eta, step = self.step_size("eta", eta, self.geometry.on_w(aerr_eta(k, problem.d, problem.n_examples), X))
        self.engine = self.uniform_engine(k, step)
