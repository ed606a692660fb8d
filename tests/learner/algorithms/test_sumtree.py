"""The sum tree's two ways of recomputing the nodes above changed leaves (one node at a time, or every level at
once) give the same tree, bit for bit: the inner-product draws of the importance-sampled learners read it."""

from __future__ import annotations

import numpy as np
import pytest

from learner.algorithms.shared.sumtree import RunningTotal, SumTree, _rebuild_threshold


def _one_by_one(tree: SumTree, moved: dict[int, float]) -> None:
    for i, w in moved.items():
        tree.set(i, w)


@pytest.mark.parametrize("d", [1, 2, 3, 500, 784, 5_000])
def test_every_way_of_setting_leaves_gives_the_same_nodes(d: int) -> None:
    rng = np.random.default_rng(d)
    start = rng.random(d)
    reference, by_mapping, by_array = SumTree(start), SumTree(start), SumTree(start)
    for m in [1, 2, 5, 25, 57, d]:
        m = min(m, d)
        for _ in range(5):
            at = rng.choice(d, m, replace=False)
            # Weights over many orders of magnitude, and zeros: the additions round, and must round alike.
            weights = 10.0 ** rng.uniform(-8, 8, m) * (rng.random(m) > 0.2)
            moved = dict(zip(at.tolist(), weights.tolist(), strict=True))
            _one_by_one(reference, moved)
            by_mapping.set_many(moved)
            by_array.set_array(at, weights)
            assert by_mapping.nodes() == reference.nodes()
            assert by_array.nodes() == reference.nodes()
    assert SumTree(np.array(reference.nodes()[reference.size : reference.size + d])).nodes() == reference.nodes()


def test_both_ways_are_taken() -> None:
    # The threshold between them is neither never nor always reached at the sizes the learners meet.
    for size in (512, 1024, 131_072):
        assert 1 < _rebuild_threshold(size) < size


def test_draws_never_land_on_a_zero_weight_leaf() -> None:
    tree = SumTree(np.array([0.0, 1.0, 0.0, 0.0, 2.0, 0.0]))
    draws = {tree.sample(u) for u in np.linspace(0.0, 1.0, 1001)[:-1].tolist()}
    assert draws == {1, 4}
    tree.set_many({1: 0.0, 3: 5.0})
    assert {tree.sample(u) for u in np.linspace(0.0, 1.0, 101)[:-1].tolist()} == {3, 4}
    assert tree.total == 7.0


def test_a_running_total_set_many_is_set_one_by_one() -> None:
    # Through several exact resyncs (every n changes), over weights of 12 orders of magnitude: the same total, bit
    # for bit, and the same state after.
    rng = np.random.default_rng(7)
    weights = 10.0 ** rng.uniform(-6, 6, 300)
    one_by_one, at_once = RunningTotal(weights), RunningTotal(weights)
    for _ in range(40):
        at = rng.choice(300, 23, replace=False).tolist()
        new = (10.0 ** rng.uniform(-6, 6, 23)).tolist()
        for i, v in zip(at, new, strict=True):
            one_by_one.set(i, v)
        at_once.set_many(at, new)
        assert at_once.total == one_by_one.total
        assert vars(at_once) == vars(one_by_one)
