"""Cost-aware DDAERR — beyond the papers: Kukliansky & Shamir (2015), Algorithm 1 with eq. (4) redone under a total
cost.

DDAERR (``kukliansky_shamir_2015.ddaerr``) whose two draws weigh each attribute by its price: the data-point draws
of x̃ from q_i ∝ sqrt(E[x_i²] / c_i) and the inner-product draws from p_j ∝ |w_j| sqrt(E[x_j²] / c_j). Under a total
cost C, Theorem 3.1's bound with Lemma 3.4 is smallest, when x̃'s variance dominates, at the q that minimises (Σ_i
E[x_i²] / q_i) · (Σ_i q_i c_i): the variance of a draw times what a draw costs. By Cauchy-Schwarz that is q_i ∝
sqrt(E[x_i²] / c_i), with minimum (Σ_i sqrt(E[x_i²] c_i))²; the derivation, and the inner product's, are in
``learner/algorithms/shared/prices.py``. None of the five papers prices attributes differently: this is ours. It is
DDAERR with the price strategy ``SESSION_PRICES``.

Choices (beyond DDAERR's, which all hold):

- The prices are the session's, declared by the oracle with the prior knowledge (``Problem.costs``), relative to
  the cheapest; a free attribute counts as 1% of the mean price. Equal prices give DDAERR exactly.
- η is Theorem 3.5's with S = Σ_i E[x_i²] / q_i of this q, (Σ sqrt(E[x_i²] c_i))(Σ sqrt(E[x_i²] / c_i)), in place of
  ||E[x²]||_{1/2}; m stays the run's horizon.
"""

from __future__ import annotations

from learner.algorithms.kukliansky_shamir_2015.ddaerr import DDAERR
from learner.algorithms.shared.prices import SESSION_PRICES


class CostAwareDDAERR(DDAERR):
    """DDAERR under a total cost: q ∝ sqrt(E x_i² / c_i), p ∝ |w_j| sqrt(E x_j² / c_j)."""

    id = "ddaerr-cost"
    name = "Cost-aware DDAERR (beyond the papers)"
    algorithm = "Alg. 1, priced (ours)"
    prices = SESSION_PRICES
    needs_costs = True  # the runner fetches the session's prices for them
