"""Cesa-Bianchi, Shalev-Shwartz & Shamir (2011), "Efficient Learning with Partially Observed Attributes", JMLR 12.

- ``aer``: AER, Attribute Efficient Regression (Fig. 2): ``aer.py``
- ``aer-baseline``: the Baseline, a Lasso on an estimated loss (Fig. 1): ``aer_baseline.py``
"""

PAPER = "Cesa-Bianchi, Shalev-Shwartz, Shamir 2011, Efficient Learning with Partially Observed Attributes"
