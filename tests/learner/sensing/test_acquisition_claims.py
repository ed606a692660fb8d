"""The statistical claims of issue #38 on CUBE, whose informative attributes vary from example to example: greedy
acquisition beats random and static acquisition at small numbers of attributes (3 and 4 of 20), and the Q-learning
policy trained on the environment reads better than before its training. Fixed seeds; each claim is a one-sided
paired t-test over the same test examples (one session's episodes, the seed's order), Holm-corrected, at the 5 %
level, and the 95 % interval of the mean difference in accuracy above a stated floor."""

from __future__ import annotations

import numpy as np

from budgetlab.local_session import LocalSession
from budgetlab.sensing import SensingEnv
from client.comparison.verdicts import ALPHA, holm, paired_test
from learner.sensing.adapter import Episode, play_many
from learner.sensing.evaluation import Settings, evaluate
from learner.sensing.q_learning import QLearningPolicy, train
from learner.sensing.training import read_training_split

# The least gain in accuracy the intervals must clear. Measured here: greedy against static +9.0 points at k = 3
# (interval [4.7, 13.3]) and +8.3 at k = 4 ([3.9, 12.7]), against random +40.7 and +53.3; Q-learning after 600
# episodes against untrained +23.2 ([15.6, 30.8]). Over seeds (budgetlab sense --dataset cube, seeds 0-4, 500
# examples) greedy beats static at k = 3, 4, 6 and 8, not at 1 (the same first read) nor shown at 2.
FLOOR = 0.02


def correct(episodes: list[Episode] | tuple[Episode, ...]) -> np.ndarray:
    return np.array([1.0 - float(e.loss or 0.0) for e in episodes])


def test_greedy_beats_random_and_static_at_three_and_four_attributes_on_cube() -> None:
    settings = Settings(budgets=(3, 4), examples=300, train_examples=1500, rl_episodes=0)
    _, points = evaluate("cube", {}, 0, ["random", "static", "greedy"], settings)
    found = {(p.policy, p.budget): p for p in points}
    tests = []
    for k in (3, 4):
        greedy = found["greedy", k].episodes
        for other in ("random", "static"):
            theirs = found[other, k].episodes
            assert [e.example for e in theirs] == [e.example for e in greedy]  # the same examples, paired
            tests.append(paired_test(correct(greedy) - correct(theirs)))
    assert all(t is not None for t in tests)
    adjusted = holm([t.p_greater for t in tests if t is not None])
    assert max(adjusted) < ALPHA, adjusted
    assert min(t.low for t in tests if t is not None) > FLOOR, [(t.mean, t.low) for t in tests if t is not None]


def test_q_learning_trained_on_the_environment_reads_better_than_untrained() -> None:
    read = read_training_split(LocalSession.open("cube", split="train", seed=0), 1000)
    scores = []
    for episodes in (0, 600):
        policy = QLearningPolicy(seed=0)
        policy.fit(read.X, read.y, np.ones(20), "classification")
        if episodes:
            train(policy, SensingEnv("cube", split="train", seed=0, reads=3, cost_weight=0.01), episodes, seed=0)
        scores.append(correct(play_many(SensingEnv("cube", split="test", seed=0, reads=3), policy, 250, seed=0)))
    test = paired_test(scores[1] - scores[0])
    assert test is not None and test.p_greater < ALPHA and test.low > FLOOR, test
