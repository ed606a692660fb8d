"""Cost-aware DDAELR — beyond the papers: Kukliansky & Shamir (2015), Algorithm 3 with Lemma 4.3 redone under a
total cost.

DDAELR (``kukliansky_shamir_2015.ddaelr``) under a total cost C. Its data-point q_i ∝ E[x_i²] stays: Theorem 4.1
goes through max_i E[x_i²] / q_i, and (max_i E[x_i²] / q_i) · (Σ_i q_i c_i) >= Σ_i E[x_i²] c_i for every q, with
equality at Lemma 4.3's q, so prices do not move it. The inner-product draws become p_j ∝ |w_j| sqrt(E[x_j²] / c_j),
the q ∝ sqrt(a / c) that minimises (Σ a_j / p_j)(Σ p_j c_j) for a_j = w_j² E[x_j²]. Both derivations are in
``learner/algorithms/shared/prices.py``. None of the five papers prices attributes differently: this is ours. It is
DDAELR with the price strategy ``SESSION_PRICES``.

Choices (beyond DDAELR's, which all hold): the prices are the session's (``Problem.costs``), relative to the
cheapest, a free attribute counting as 1% of the mean price; equal prices give DDAELR exactly; η is DDAELR's.
"""

from __future__ import annotations

from learner.algorithms.kukliansky_shamir_2015.ddaelr import DDAELR
from learner.algorithms.shared.prices import SESSION_PRICES


class CostAwareDDAELR(DDAELR):
    """DDAELR under a total cost: q ∝ E x_i² (already cost-optimal), p ∝ |w_j| sqrt(E x_j² / c_j)."""

    id = "ddaelr-cost"
    name = "Cost-aware DDAELR (beyond the papers)"
    algorithm = "Alg. 3, priced (ours)"
    prices = SESSION_PRICES
    needs_costs = True  # the runner fetches the session's prices for them
