"""Ito, Hatano, Sumita, Yabe, Fukunaga, Kakimura & Kawarabayashi (2017), "Efficient Sublinear-Regret Algorithms for
Online Sparse Linear Regression with Limited Observation", NIPS 2017 (the online protocol).

- ``ito1``, ``ito2``, ``ito3``: Algorithms 1, 2 and 3: ``ito1.py``, ``ito2.py``, ``ito3.py``
- ``greedy``, ``uniform``: the baselines (i) and (ii) of §6: ``greedy.py``, ``uniform.py``

Algorithm 1's loop, which the baselines share, is ``learner/algorithms/shared/dual_averaging.py``.
"""

PAPER = "ito-et-al-2017"
