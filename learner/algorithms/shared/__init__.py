"""What the algorithms share, and no algorithm of its own: the importance-sampled gradient engine of Hazan & Koren's
and Kukliansky & Shamir's learners (``attribute_efficient``) with its estimators, iterates, sum trees, geometries,
price and step-size strategies, the data-dependent draws and the two phases; Ito et al.'s dual averaging; the
full-information references' parts; hard thresholding, the L1 projection, sampling with replacement; what an
algorithm that chooses ahead keeps for the examples it chose (``lookahead``).
"""
