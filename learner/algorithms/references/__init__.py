"""The full-information references of the papers' experiments: learners that observe every attribute of every example,
which the budgeted learners are measured against (Cesa-Bianchi et al. 2011 §7, Hazan & Koren 2012 §5, Kukliansky &
Shamir 2015 §5).

- ``ridge``, ``lasso``: offline ridge and Lasso, their penalty cross-validated as the papers did: ``ridge.py``,
  ``lasso.py``
- ``ogd-ridge``, ``eg-lasso``: online ridge by gradient descent and online Lasso by EG±: ``ogd_ridge.py``,
  ``eg_lasso.py``

What each pair shares is ``learner/algorithms/shared/full_information.py``.
"""
