"""Cost-aware Two-Phased DDAERR — beyond the papers: Kukliansky & Shamir (2015), Algorithm 2 with its phase 2 under
a total cost.

Two-Phased DDAERR (``kukliansky_shamir_2015.ddaerr_2phase``) whose phase 2 samples as cost-aware DDAERR does
(``ddaerr_cost.py``), with the estimated moments A: q_i ∝ sqrt(A_i / c_i), p_j ∝ |w_j| sqrt(A_j / c_j), and Theorem
3.12's ||2A||_{1/2} replaced by Σ_i 2A_i / q_i of that q (derivation: ``learner/algorithms/shared/prices.py``). None
of the five papers prices attributes differently: this is ours. It is Two-Phased DDAERR with the price strategy
``SESSION_PRICES``.

Choices (beyond Two-Phased DDAERR's, which all hold): phase 1 stays AERR's uniform exploration (it estimates A, and
its step size is AERR's theorem for uniform draws); the prices are the session's (``Problem.costs``), relative to
the cheapest, a free attribute counting as 1% of the mean price; equal prices give Two-Phased DDAERR exactly.
"""

from __future__ import annotations

from learner.algorithms.kukliansky_shamir_2015.ddaerr_2phase import TwoPhasedDDAERR
from learner.algorithms.shared.prices import SESSION_PRICES


class CostAwareTwoPhasedDDAERR(TwoPhasedDDAERR):
    """Two-Phased DDAERR whose phase 2 draws q ∝ sqrt(A_i / c_i) and p ∝ |w_j| sqrt(A_j / c_j)."""

    id = "ddaerr-2p-cost"
    name = "Cost-aware Two-Phased DDAERR (beyond the papers)"
    algorithm = "Alg. 2, priced (ours)"
    prices = SESSION_PRICES
    needs_costs = True  # the runner fetches the session's prices for them
