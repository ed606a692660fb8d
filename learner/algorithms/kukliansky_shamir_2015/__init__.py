"""Kukliansky & Shamir (2015), "Attribute Efficient Linear Regression with Data-Dependent Sampling", ICML 2015.

- ``gaerr``, ``gaelr``: General AERR and AELR, data-point draws from a given q (Algorithms 1 and 3): ``gaerr.py``,
  ``gaelr.py``
- ``ddaerr``, ``ddaelr``: the data-dependent learners, q optimal given the second moments (§3.1, §4.1): ``ddaerr.py``,
  ``ddaelr.py``
- ``ddaerr-2phase``, ``ddaelr-2phase``: the two-phased learners, which estimate the moments first (Algorithms 2 and
  4): ``ddaerr_2phase.py``, ``ddaelr_2phase.py``

Their cost-aware variants are budgetlab's own (``beyond_the_papers``).
"""

PAPER = "Kukliansky & Shamir 2015, Attribute Efficient Linear Regression with Data-Dependent Sampling"
