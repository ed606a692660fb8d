"""Murata & Suzuki (2018), "Sample Efficient Stochastic Gradient Iterative Hard Thresholding Method for Stochastic
Sparse Linear Regression with Limited Attribute Observation", NeurIPS 2018.

- ``exploration``: Algorithm 1, hard-thresholded SGD with block-wise gradients: ``exploration.py``
- ``exploitation``: Algorithm 2, mini-batch SGD on a fixed support: ``exploitation.py``
- ``hybrid``: Algorithm 3, stages of both: ``hybrid.py``
"""

PAPER = "Murata & Suzuki 2018, Sample Efficient Stochastic Gradient Iterative Hard Thresholding Method"
