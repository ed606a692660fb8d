"""Cost-aware Two-Phased DDAELR — beyond the papers: Kukliansky & Shamir (2015), Algorithm 4 with its phase 2 under
a total cost.

Two-Phased DDAELR (``kukliansky_shamir_2015.ddaelr_2phase``) whose phase 2 samples as cost-aware DDAELR does
(``ddaelr_cost.py``): q_i ∝ A_i (already cost-optimal under Theorem 4.1's max-norm bound) and p_j ∝ |w_j| sqrt(A_j /
c_j) (derivation: ``learner/algorithms/shared/prices.py``). None of the five papers prices attributes differently:
this is ours. It is Two-Phased DDAELR with the price strategy ``SESSION_PRICES``.

Choices (beyond Two-Phased DDAELR's, which all hold): phase 1 stays AELR's uniform exploration; the prices are the
session's (``Problem.costs``), relative to the cheapest, a free attribute counting as 1% of the mean price; equal
prices give Two-Phased DDAELR exactly.
"""

from __future__ import annotations

from learner.algorithms.kukliansky_shamir_2015.ddaelr_2phase import TwoPhasedDDAELR
from learner.algorithms.shared.prices import SESSION_PRICES


class CostAwareTwoPhasedDDAELR(TwoPhasedDDAELR):
    """Two-Phased DDAELR whose phase 2 draws p ∝ |w_j| sqrt(A_j / c_j)."""

    id = "ddaelr-2p-cost"
    name = "Cost-aware Two-Phased DDAELR (beyond the papers)"
    algorithm = "Alg. 4, priced (ours)"
    prices = SESSION_PRICES
    needs_costs = True  # the runner fetches the session's prices for them
