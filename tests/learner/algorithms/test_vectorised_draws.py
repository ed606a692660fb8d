"""The algorithms' vectorised steps give what their one-at-a-time forms give, bit for bit (#36 item 1): the data-point
draws of a whole example at once (``DataPointSampler.draw_many``) against ``draw`` of each uniform, the inner-product
draws (``ScaledIterate.sample_many``) against ``sample``, with and without the per-attribute weights c of K&S §5, and x̃
summed with NumPy (``sum_draws``, over each example's distinct draws listed at once by ``distinct_draws``) against the
loop over the draws (``estimate_x``), and the step sizes' sums of squares against Python's left-to-right loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest

from learner.algorithms.shared.attribute_efficient import DataPointSampler, with_draws
from learner.algorithms.shared.estimators import (
    COUNTED_UP_TO,
    distinct_draws,
    estimate_inner,
    estimate_x,
    mean_products,
    sum_counted,
    sum_draws,
)
from learner.algorithms.shared.iterates import LassoIterate, RidgeIterate
from learner.algorithms.shared.step_sizes import sum_of_squares


@pytest.mark.parametrize("q", [None, "powers", "zeros"])
def test_draw_many_draws_what_draw_draws(q: str | None) -> None:
    d = 40
    weights = {None: None, "powers": np.arange(1, d + 1) ** -1.5, "zeros": np.r_[np.ones(d - 5), np.zeros(5)]}[q]
    sampler = DataPointSampler(d, weights)
    # the very top of [0, 1) too, where rounding can land past the last positive q
    uniforms = np.r_[np.random.default_rng(0).random(500), 1.0 - 2.0**-53, 0.0]
    for few in (uniforms[-3:], uniforms[:3], uniforms):  # a few draws are made one at a time, many with NumPy
        indices, inverses = sampler.draw_many(few)
        one_by_one = [sampler.draw(u) for u in few.tolist()]
        assert indices.tolist() == [i for i, _ in one_by_one]
        assert [v.hex() for v in inverses] == [v.hex() for _, v in one_by_one]


@pytest.mark.parametrize("kind", ["ridge", "ridge-c", "lasso", "lasso-c"])
def test_sample_many_samples_what_sample_samples(kind: str) -> None:
    d = 30
    rng = np.random.default_rng(1)
    c = rng.random(d) + 0.1 if kind.endswith("-c") else None
    start = rng.standard_normal(d) * (rng.random(d) < 0.5)
    iterate = (RidgeIterate(d, 10.0, power=2 if c is None else 1, c=c, start=start) if kind.startswith("ridge")
               else LassoIterate(d, 100.0, c=c, start=start))
    uniforms = rng.random(200).tolist()
    drawn, ratios = iterate.sample_many(uniforms)
    one_by_one = [iterate.sample(u) for u in uniforms]
    assert drawn == [j for j, _ in one_by_one]
    assert [r.hex() for r in ratios] == [r.hex() for _, r in one_by_one]



class Looped(NamedTuple):
    """One row's draws of a random x with random weights 1/q, and what ``estimate_x``'s loop makes of them."""

    x: np.ndarray
    drawn: np.ndarray
    inverse: np.ndarray
    observed: dict[int, float]
    at: np.ndarray
    looped: np.ndarray


def looped_draws(rng: np.random.Generator, d: int, draw: Callable[[], np.ndarray]) -> Looped:
    """x over many magnitudes and q, then the row's draws (``draw``), and the loop's x̃ of them."""
    x = rng.standard_normal(d) * 10.0 ** rng.uniform(-3, 3, d)
    q = rng.random(d) + 0.01
    drawn = draw()
    inverse = (1.0 / q)[drawn]
    observed = {i: float(x[i]) for i in drawn.tolist()}
    at, looped = estimate_x(drawn.tolist(), inverse.tolist(), observed)
    return Looped(x, drawn, inverse, observed, at, looped)


def test_sum_draws_sums_what_the_loop_over_the_draws_sums() -> None:
    # Few attributes, many draws: most are drawn several times (up to 14), so the order of each sum shows.
    rng = np.random.default_rng(2)
    d, k = 12, 56
    for _ in range(50):
        row = looped_draws(rng, d, lambda: rng.integers(0, d, k))
        found = distinct_draws(row.drawn[None, :], d)
        summed = sum_draws(np.array([row.observed[i] for i in row.drawn.tolist()]), row.inverse, found.slots[0])
        assert found.attributes.tolist() == row.at.tolist() == list(dict.fromkeys(row.drawn.tolist()))
        assert [v.hex() for v in summed.tolist()] == [v.hex() for v in row.looped.tolist()]


def test_sum_counted_sums_what_the_loop_sums_up_to_three_draws_of_an_attribute() -> None:
    # Each distinct attribute's term times its count of draws (1 to COUNTED_UP_TO): the loop's floats.
    rng = np.random.default_rng(4)
    d, k = 30, 40
    for _ in range(200):
        row = looped_draws(rng, d, lambda: rng.permutation(np.repeat(np.arange(d),
                                                                     rng.integers(0, COUNTED_UP_TO + 1, d)))[:k])
        found = distinct_draws(row.drawn[None, :], d)
        assert found.counts.max() <= COUNTED_UP_TO
        summed = sum_counted(row.x[found.attributes], row.inverse[found.firsts], found.counts.astype(float),
                             len(row.drawn))
        assert [v.hex() for v in summed.tolist()] == [v.hex() for v in row.looped.tolist()]


@pytest.mark.parametrize(("d", "k"), [(784, 56), (12, 56), (3, 20), (100_000, 30), (5, 1)])
def test_distinct_draws_lists_what_dict_fromkeys_lists(d: int, k: int) -> None:
    # A block of examples' draws at once (a key per row and attribute: beyond 2^16 keys, not sorted as uint16)
    drawn = np.random.default_rng(d).integers(0, d, (64, k))
    found = distinct_draws(drawn, d)
    start = 0
    for r, (row, end, row_slots) in enumerate(zip(drawn.tolist(), found.ends.tolist(), found.slots.tolist(),
                                                  strict=True)):
        listed = list(dict.fromkeys(row))
        assert found.attributes[start:end].tolist() == listed
        assert row_slots == [listed.index(i) for i in row]
        assert found.counts[start:end].tolist() == [row.count(i) for i in listed]
        assert found.firsts[start:end].tolist() == [r * k + row.index(i) for i in listed]
        start = end
    assert start == len(found.attributes)


@pytest.mark.parametrize("draws", [[], [7], [3], [7, 9, 7, 3, 11]])
def test_with_draws_lists_what_dict_fromkeys_lists(draws: list[int]) -> None:
    listed = [5, 3, 8]
    selected, slots = with_draws(listed, draws)
    assert selected == list(dict.fromkeys(listed + draws))
    assert [selected[s] for s in slots] == draws


def test_sum_of_squares_sums_left_to_right() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        values = rng.standard_normal(int(rng.integers(0, 60))) * 10.0 ** rng.uniform(-150, 150)
        looped = 0.0
        for v in values.tolist():
            looped += v * v
        assert sum_of_squares(values).hex() == looped.hex()


@pytest.mark.parametrize("draws", [0, 1, 2, 9])
def test_mean_products_estimates_what_estimate_inner_estimates(draws: int) -> None:
    # From the step's values by slot (φ̃ of the block path) against the dict's lookups: the same float, -0.0 included
    rng = np.random.default_rng(draws)
    for _ in range(50):
        values = (rng.standard_normal(12) * (rng.random(12) < 0.8)).tolist() + [-0.0]
        slots = rng.integers(0, 13, draws).tolist()
        ratios = (rng.standard_normal(draws) * 100.0).tolist()
        observed = dict(enumerate(values))
        assert mean_products(ratios, values, slots).hex() == estimate_inner(slots, ratios, observed).hex()
