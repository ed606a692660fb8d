"""budgetlab's own algorithms, beyond the five papers (docs/guide/algorithms.md).

- ``ddaerr-cost``, ``ddaelr-cost``, ``ddaerr-2p-cost``, ``ddaelr-2p-cost``: Kukliansky & Shamir's data-dependent
  learners with their sampling redone under a total cost (the derivation: ``learner/algorithms/shared/prices.py``),
  each its cost-blind twin with the session's prices: ``ddaerr_cost.py``, ``ddaelr_cost.py``,
  ``ddaerr_2phase_cost.py``, ``ddaelr_2phase_cost.py``
- ``screening``: sure independence screening, then least squares on the survivors (after Fan & Lv 2008); the
  estimator's default: ``screening.py``
"""
