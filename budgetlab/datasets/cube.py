"""``cube``: the CUBE set of the active feature acquisition literature (Rückstieß et al. 2011; Shim et al. 2018,
"CUBE-sigma"; AFABench 2025): 8 classes whose informative attributes differ from class to class.

The label c is uniform over 0..7 (served as the floats 0.0..7.0). Attributes c, c+1 and c+2 of an example of class c
are the corners of a cube, N(bit j of c, sigma^2) for attribute c + j (bit 0 the least significant, as AFABench
orders them: class 1 has means (1, 0, 0)); every other attribute is uniform on [0, 1]. Attributes 10..d-1 are
therefore noise for every class, and which of 0..9 inform the label varies from example to example: a policy that
reads the same attributes for every example needs more of them than one that reads the next from what it saw.

Choices:
- sigma = 0.1, the literature's usual setting (Shim et al. also use 0.2 and 0.3); d = 20 as there.
- Sizes: 20,000 examples as in AFABench, split 80% / 20% positionally (rows are i.i.d.).
- The seed draws the labels, the Gaussian cells and the uniform cells from separate streams.
"""

from __future__ import annotations

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.datasets.family import Data, Generated, Param, read_only

_TAG = 0xC0BE
N_CLASSES = 8
BITS = 3  # a class's code, and its informative attributes: c, c+1, c+2
CLASSES = tuple(float(c) for c in range(N_CLASSES))


def informative_attributes(label: int) -> tuple[int, ...]:
    """The attributes that inform an example of class ``label``."""
    return tuple(range(label, label + BITS))


def corner(label: int) -> np.ndarray:
    """The means of a class's informative attributes: the bits of its code, least significant first."""
    return np.array([(label >> j) & 1 for j in range(BITS)], dtype=np.float64)


class Cube(Generated):
    pattern = example = "cube"
    task = "classification"
    classes = CLASSES
    source = "synthetic: the CUBE set of active feature acquisition (Rückstieß et al. 2011; Shim et al. 2018)"
    params = (
        Param("d", int, 20, "number of attributes (the classes' informative ones are among the first 10)",
              low=N_CLASSES + BITS - 1, high=10_000),
        Param("n_train", int, 16_000, "training examples (AFABench: 80% of 20,000)", low=1, high=10_000_000),
        Param("n_test", int, 4_000, "test examples (AFABench: 20% of 20,000)", low=1, high=10_000_000),
        Param("sigma", float, 0.1, "standard deviation of the informative attributes around their corner",
              low=0.0),
    )

    def describe(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> str:
        return (f"CUBE: 8 classes (labels 0-7); attributes c, c+1, c+2 of class c are N(the bits of c, "
                f"{params['sigma']:g}^2), the other {int(params['d']) - BITS} uniform on [0, 1] (active feature "
                "acquisition: the informative attributes vary from example to example)")

    def build(self, args: tuple[int, ...], params: dict[str, ParamValue], seed: int) -> Data:
        n_train, n_test, d = self.sizes(args, params)
        n = n_train + n_test
        label_stream, gauss_stream, uniform_stream = (
            np.random.default_rng(s) for s in np.random.SeedSequence([seed, _TAG]).spawn(3))
        labels = label_stream.integers(0, N_CLASSES, size=n)
        X = uniform_stream.uniform(0.0, 1.0, size=(n, d))
        corners = np.stack([corner(c) for c in range(N_CLASSES)])
        rows = np.arange(n)[:, None]
        columns = labels[:, None] + np.arange(BITS)[None, :]
        X[rows, columns] = corners[labels] + float(params["sigma"]) * gauss_stream.standard_normal((n, BITS))
        y = labels.astype(np.float64)
        read_only(X, y)
        return Data(X, y, np.arange(n_train), np.arange(n_train, n))


FAMILY = Cube()
