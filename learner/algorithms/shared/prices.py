"""Cost-aware sampling: Kukliansky & Shamir's variance argument redone under a total cost. Beyond the five papers.

Every paper here counts attributes: a budget of k per example, or of K in all, each attribute costing 1. When the
attributes have prices c_i and the budget is a total cost C, the sampling distributions of Kukliansky & Shamir
(2015) are no longer the ones their own argument asks for. This module redoes that argument with prices.

**The lemma.** For a_i >= 0 and c_i > 0, over the distributions q on {1..d} (q_i > 0 where a_i > 0),

    (Σ_i a_i / q_i) · (Σ_i q_i c_i)  >=  (Σ_i sqrt(a_i c_i))²,   with equality iff  q_i ∝ sqrt(a_i / c_i).

Proof: Σ_i sqrt(a_i c_i) = Σ_i sqrt(a_i / q_i) · sqrt(q_i c_i) <= sqrt(Σ_i a_i / q_i) · sqrt(Σ_i q_i c_i) by
Cauchy-Schwarz, with equality iff the two vectors are proportional, sqrt(a_i / q_i) = λ sqrt(q_i c_i), i.e.
q_i = sqrt(a_i / c_i) / λ. (Lagrange gives the same: the derivative of the product in q_i is
-P a_i / q_i² + S c_i with S = Σ a/q and P = Σ q c, zero iff q_i² = (P/S) a_i / c_i.) With c_i = 1 it is eq. (4)'s
problem (3), whose minimum is ||a||_{1/2} = (Σ sqrt a_i)².

**Ridge (DDAERR, §3.1).** One data-point draw r of x̃ (eq. (1)) has E||x̃_{t,r}||² = Σ_i E[x_i²] / q_i (eq. (2)),
and Theorem 3.1 with Lemma 3.4 bounds the excess risk by 4B² sqrt((S/k + 1) / m) with S that sum, k draws per
example and m examples. Under a total cost C, a draw of i costs c_i, so a draw costs Σ_i q_i c_i on average and C
buys m = C / (k Σ_i q_i c_i) examples (an upper bound on what is paid: an index drawn twice in one example is paid
once). In the regime attribute-efficient learning is for, S/k >> 1, the bound is then

    4B² sqrt(S / (k m)) = 4B² sqrt((Σ_i E[x_i²] / q_i) · (Σ_i q_i c_i) / C),

and the lemma with a_i = E[x_i²] minimises it at **q_i ∝ sqrt(E[x_i²] / c_i)**, where the product is
(Σ_i sqrt(E[x_i²] c_i))². The cost-blind eq. (4), q_i ∝ sqrt(E[x_i²]), gives (Σ_i sqrt E[x_i²]) ·
(Σ_i sqrt(E[x_i²]) c_i) instead: ``cost_gain`` is their ratio, >= 1, and 1 exactly when the prices are equal (on
the attributes with E[x_i²] > 0). The bound's excess risk shrinks by its square root at equal total cost.

**The inner product (§5's estimator).** φ̃ draws j ~ p and uses w_j x_j / p_j (eq. (5)); its second moment is
Σ_j w_j² E[x_j²] / p_j, so the same lemma with a_j = w_j² E[x_j²] gives **p_j ∝ |w_j| sqrt(E[x_j²] / c_j)**, the
experiments' p_j ∝ |w_j| sqrt(E[x_j²]) with the price in. Each estimator is optimised on its own (the product of
the two second moments over the cost of both draws has no closed form); both are exact at equal prices.

**Lasso (DDAELR, §4.1).** Theorem 4.1 bounds the risk through ||E[x̃²]||_∞ = max_i E[x_i²] / (k q_i) + ...
(Lemma 4.2), so the quantity is (max_i a_i / q_i) · (Σ_i q_i c_i). It is at least Σ_i a_i c_i for every q (with
M = max_i a_i / q_i, q_i >= a_i / M, so M Σ q_i c_i >= Σ a_i c_i), and Lemma 4.3's q_i ∝ a_i = E[x_i²] attains it:
**the lasso's data-point q is already cost-optimal**, and only its inner-product draw changes with the prices.

Choices, where the argument leaves them open:

- Prices are taken relative to the cheapest (c_i / min c): the distributions are invariant to a common factor, and
  equal prices give the cost-blind algorithm exactly (the same q, p and step size, bit for bit).
- A free attribute (c_i = 0) would get q_i = ∞: prices are floored at ``FREE_FLOOR`` of the mean price, so it is
  drawn often, never always.
- The step size keeps its theorem, with S = Σ_i E[x_i²] / q_i of the q in use (``data_point_spread``) and the run's
  horizon for m, as the cost-blind algorithms do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learner.algorithms.base import Problem

# A price below this fraction of the mean price counts as this fraction: a free attribute is drawn often, not always.
FREE_FLOOR = 0.01


def relative_prices(costs: np.ndarray | None) -> np.ndarray | None:
    """The prices over the cheapest one (floored: see above); None when there are none or every attribute costs the
    same, where the paper's distributions are the optimum."""
    if costs is None:
        return None
    costs = np.asarray(costs, dtype=np.float64)
    if costs.size == 0 or np.all(costs == costs[0]):
        return None
    floored = np.maximum(costs, FREE_FLOOR * float(costs.mean()))
    relative: np.ndarray = floored / floored.min()
    return relative


@dataclass(frozen=True)
class Prices:
    """The price strategy of a sampled learner: whether its draws weigh each attribute by its price. ``COST_BLIND``
    is the papers' (every attribute costs 1); ``SESSION_PRICES`` takes the session's (``Problem.costs``), which the
    runner fetches for an algorithm that declares ``needs_costs``: a cost-aware learner is its cost-blind twin with
    this strategy and that declaration."""

    priced: bool

    def relative(self, problem: Problem) -> np.ndarray | None:
        """The prices the draws weigh attributes by (``relative_prices``); None: the paper's distributions."""
        return relative_prices(problem.costs) if self.priced else None


COST_BLIND = Prices(priced=False)
SESSION_PRICES = Prices(priced=True)


def ridge_data_point_weights(moments: np.ndarray, prices: np.ndarray | None) -> np.ndarray:
    """q ∝ sqrt(E[x_i²] / c_i) (eq. (4) when the prices are equal)."""
    q: np.ndarray = np.sqrt(moments) if prices is None else np.sqrt(moments / prices)
    return q


def inner_product_weights(moments: np.ndarray, prices: np.ndarray | None) -> np.ndarray:
    """c_j of p_j ∝ |w_j| c_j: sqrt(E[x_j²] / c_j) (§5's sqrt(E[x_j²]) when the prices are equal)."""
    return ridge_data_point_weights(moments, prices)


def data_point_spread(moments: np.ndarray, prices: np.ndarray | None) -> float:
    """S = Σ_i E[x_i²] / q_i at q ∝ sqrt(E[x_i²] / c_i): (Σ_i sqrt(E[x_i²] c_i)) · (Σ_i sqrt(E[x_i²] / c_i)),
    which is ||E[x²]||_{1/2} when the prices are equal."""
    if prices is None:
        return float(np.sum(np.sqrt(moments))) ** 2
    return float(np.sum(np.sqrt(moments * prices))) * float(np.sum(np.sqrt(moments / prices)))


def cost_gain(moments: np.ndarray, costs: np.ndarray) -> float:
    """How much smaller the cost-aware ridge sampling makes (second moment of x̃) × (expected price of a draw) than
    eq. (4)'s cost-blind q: (Σ sqrt m)(Σ sqrt(m) c) / (Σ sqrt(m c))², >= 1, 1 at equal prices."""
    m = np.asarray(moments, dtype=np.float64)
    c = np.asarray(costs, dtype=np.float64)
    blind = float(np.sum(np.sqrt(m))) * float(np.sum(np.sqrt(m) * c))
    aware = float(np.sum(np.sqrt(m * c))) ** 2
    return blind / aware if aware > 0 else 1.0
