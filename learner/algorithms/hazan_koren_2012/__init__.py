"""Hazan & Koren (2012), "Linear Regression with Limited Observation", ICML 2012.

- ``aerr``: AERR, Attribute Efficient Ridge Regression (Algorithm 1): ``aerr.py``
- ``aelr``: AELR, Attribute Efficient Lasso Regression (Algorithm 2): ``aelr.py``
- ``aesvr``: AESVR, Attribute Efficient Support-Vector Regression (Algorithm 4, with Procedure 3): ``aesvr.py``
"""

PAPER = "Hazan & Koren 2012, Linear Regression with Limited Observation"
