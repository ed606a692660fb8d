"""Ito et al. (2017): Algorithms 1-3, the greedy and uniform baselines, and the regret against the best k-sparse w."""

from __future__ import annotations

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.datasets import load_dataset
from learner.algorithms import ParamError, Problem, get_algorithm
from learner.algorithms.shared.dual_averaging import dual_averaging, estimate_gradient, observe
from learner.oracle import LocalOracle
from learner.regret import best_sparse, regret, stream_arrays
from tests.ito_runs import LONG_ROUNDS, LongRun, run

ITO_ALGORITHMS = ["ito1", "ito2", "ito3", "greedy", "uniform"]
# 4 standard errors per coordinate: a false alarm over the d = 8 coordinates has probability < 1e-3.
STANDARD_ERRORS = 4.0
ESTIMATES = 10_000


def gradient_estimates(w: np.ndarray, x: np.ndarray, y: float, k_prime: int, k1: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    samples = np.empty((ESTIMATES, len(w)))
    for n in range(ESTIMATES):
        plan = observe(w, k_prime, k1, rng)
        observed = {int(i): float(x[i]) for i in plan.selected}
        samples[n] = estimate_gradient(w, observed, y, plan)
    return samples


@pytest.mark.parametrize(
    ("w", "k1"),
    [
        (np.array([0.5, -0.3, 0.0, 0.2, -0.05, 0.0, 0.1, 0.0]), 2),  # U_t fixed: the two largest |w_i|
        (np.zeros(8), 1),  # every |w_i| ties: U_t itself is random
        (np.array([0.5, -0.3, 0.0, 0.2, -0.05, 0.0, 0.1, 0.0]), 0),  # the uniform baseline's Observe
    ],
)
def test_gradient_estimate_is_unbiased(w: np.ndarray, k1: int) -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, size=8)
    x /= 1.2 * np.linalg.norm(x)
    y = 0.4
    samples = gradient_estimates(w, x, y, k_prime=4, k1=k1, seed=11)
    exact = 2 * x * (x @ w - y)
    standard_error = samples.std(axis=0, ddof=1) / np.sqrt(ESTIMATES)
    assert np.all(np.abs(samples.mean(axis=0) - exact) <= STANDARD_ERRORS * standard_error + 1e-12), (
        samples.mean(axis=0), exact)


def test_greedy_observe_gives_the_gradient_restricted_to_the_observed_attributes() -> None:
    w = np.array([0.1, -0.7, 0.0, 0.4, 0.2])
    x, y = np.array([0.3, 0.1, -0.2, 0.4, 0.5]), -0.2
    plan = observe(w, 3, 3, np.random.default_rng(0))
    assert plan.selected.tolist() == [1, 3, 4]
    g = estimate_gradient(w, {i: float(x[i]) for i in plan.selected}, y, plan)
    mask = np.isin(np.arange(5), plan.selected)
    np.testing.assert_allclose(g, 2 * mask * x * ((mask * x) @ w - y))


def test_dual_averaging_is_the_closed_form_of_5_and_stays_in_the_ball() -> None:
    h = np.array([3.0, -4.0])
    np.testing.assert_allclose(dual_averaging(h, 10.0, 1.0), -h / 10.0)  # inside the ball: -h / λ
    np.testing.assert_allclose(dual_averaging(h, 1.0, 1.0), -h / 5.0)  # projected onto ||w|| = 1
    np.testing.assert_allclose(dual_averaging(h, 0.1, 1.0, l1=3.5), [0.0, 1.0])  # soft threshold, then the ball
    np.testing.assert_array_equal(dual_averaging(np.zeros(3), 0.0, 1.0), np.zeros(3))  # λ_1 = 0 of the adaptive rule


@pytest.mark.parametrize("algorithm", ITO_ALGORITHMS)
@pytest.mark.parametrize("k_prime", [2, 4, 10])
def test_budget_is_respected_and_every_round_predicts(algorithm: str, k_prime: int) -> None:
    if algorithm == "ito1" and k_prime == 2:
        with pytest.raises(ParamError, match="k' - 2"):
            run(algorithm, 0, 300, k_prime=k_prime, params={"k1": 1})
        return
    oracle, result = run(algorithm, 0, 300, k_prime=k_prime)
    # The oracle enforces k' per example: an overspend would end the run as budget_exhausted.
    assert result.status == "finished", result.message
    session = oracle.session
    assert result.examples == session.counters.predictions == 300
    assert all(len(seen) <= k_prime for seen in session.paid.observed.values())
    assert len(session.paid.observed) == 300  # every round observes something before it predicts
    assert result.cumulative_loss == pytest.approx(session.counters.cumulative_loss)


def test_selection_is_distinct_within_budget_and_prediction_uses_only_observed_values() -> None:
    problem = Problem(d=10, k=4, n_examples=100)
    rng = np.random.default_rng(0)
    for algorithm in ITO_ALGORITHMS:
        learner = get_algorithm(algorithm)(problem, seed=1)
        for _ in range(50):
            chosen = list(learner.select())
            assert len(set(chosen)) == len(chosen) <= 4 and all(0 <= i < 10 for i in chosen)
            x = rng.uniform(-0.3, 0.3, size=10)
            observed = {i: float(x[i]) for i in chosen}
            w = learner.current_weights()
            assert learner.predict_one(observed) == pytest.approx(sum(w[i] * x[i] for i in chosen))
            learner.update(observed, float(0.5 * x[0] - 0.5 * x[3]))


def test_parameters_are_validated() -> None:
    problem = Problem(d=10, k=4, n_examples=100)
    with pytest.raises(ParamError, match="lambda_rule"):
        get_algorithm("ito1")(problem, lambda_rule="fast")
    with pytest.raises(ParamError, match="positive"):
        get_algorithm("ito2")(problem, lambda_scale=-1)
    with pytest.raises(ParamError, match="at least 2"):
        get_algorithm("ito3")(Problem(d=10, k=1, n_examples=100))


@pytest.mark.parametrize(
    ("algorithm", "sparsity"),
    # Each in the setting its paper section is about: Algorithm 1 with k' = k + 2 (Table 2), Algorithms 2 and 3
    # with k' = k (Table 3, where Algorithm 1 cannot use the true k).
    [("ito1", 2), ("ito2", 4), ("ito3", 4)],
)
def test_loss_of_the_last_rounds_is_below_the_first_rounds(algorithm: str, sparsity: int,
                                                           ito_long_run: LongRun) -> None:
    rounds, window = LONG_ROUNDS, 1000
    losses_first, losses_last = [], []
    for seed in range(5):
        result = ito_long_run(algorithm, seed, sparsity)
        cumulative = {p.examples: p.cumulative_loss for p in result.curve}
        losses_first.append(cumulative[window])
        losses_last.append(cumulative[rounds] - cumulative[rounds - window])
    # Every learner starts at w = 0 (the loss of predicting 0). Measured over 5 instances, the last 1,000 rounds
    # cost 45-70% of the first 1,000; a learner that does not move stays near 100% (greedy and uniform: 90-100%).
    assert np.mean(losses_last) < 0.8 * np.mean(losses_first), (losses_first, losses_last)


@pytest.mark.parametrize("algorithm", ["greedy", "uniform"])
def test_baselines_learn_weights_though_their_online_loss_stays(algorithm: str, ito_long_run: LongRun) -> None:
    # Greedy and uniform have linear regret by design (their online loss barely falls), but their iterates still
    # learn: the full-information test MSE of ``weights`` after 3,000 rounds falls well below the zero predictor's
    # (measured over 3 instances: 0.52 for greedy, whose stuck attributes still carry correlated signal, 0.21 for
    # uniform). Read off the 5,000-round runs of Table 2's claim at round 3,000: no Ito learner knows its horizon,
    # so these are the weights a 3,000-round run ends with (checked equal).
    scores = [{p.examples: p for p in ito_long_run(algorithm, seed, 2).curve}[3000].normalized_mse for seed in range(3)]
    assert np.mean(scores) < 0.7, scores


def test_lambda_rule_theorem_is_theorem_2s_schedule() -> None:
    # C_{10,4,2} = 2 * 1 / 90; Theorem 2: λ_t = 8 sqrt(t / C).
    learner = get_algorithm("ito1")(Problem(d=10, k=4, n_examples=100), lambda_rule="theorem")
    assert learner.lambdas.at(9) == pytest.approx(8 * np.sqrt(9 * 45))


def test_paper_claim_algorithm_1_has_less_regret_than_greedy_and_uniform(ito_long_run: LongRun) -> None:
    # Ito et al. Table 2, (d, k, k') = (10, 2, 4), T = 5,000: A1 1.53e2, G 33.28e2, U 25.73e2. Our instances sit
    # well inside the unit ball, so every regret is smaller; the claim checked is the ordering with a margin:
    # over 5 instances Algorithm 1's mean regret is below half of greedy's and of uniform's (measured: about
    # 5 against 42 and 58).
    rounds, seeds = LONG_ROUNDS, range(5)
    regrets: dict[str, list[float]] = {"ito1": [], "greedy": [], "uniform": []}
    for seed in seeds:
        dataset = load_dataset("online-sparse", {"d": 10, "k": 2}, seed)
        X, y = stream_arrays(dataset, "train", seed, rounds)
        for algorithm in regrets:
            result = ito_long_run(algorithm, seed, 2)  # k' = 4, the stream of ``dataset`` from ``seed``
            assert result.status == "finished" and result.examples == rounds, result.message
            regrets[algorithm].append(regret(result.cumulative_loss, X, y, k=2, radius=1.0))
    mean = {a: float(np.mean(r)) for a, r in regrets.items()}
    assert mean["ito1"] < 0.5 * mean["greedy"], mean
    assert mean["ito1"] < 0.5 * mean["uniform"], mean


def test_best_sparse_is_the_exhaustive_least_squares_optimum() -> None:
    rng = np.random.default_rng(5)
    X = rng.standard_normal((200, 6))
    w_true = np.array([0.0, 1.5, 0.0, -2.0, 0.0, 0.0])
    y = X @ w_true + 0.1 * rng.standard_normal(200)
    fit = best_sparse(X, y, 2)
    assert fit.support == (1, 3)
    exact, *_ = np.linalg.lstsq(X[:, [1, 3]], y, rcond=None)
    np.testing.assert_allclose(fit.weights[[1, 3]], exact, rtol=1e-8)
    assert fit.loss == pytest.approx(float(np.sum((X @ fit.weights - y) ** 2)))
    # With ||w|| <= 1 the comparator is on the sphere and worse; regret of its own predictions is 0.
    bounded = best_sparse(X, y, 2, radius=1.0)
    assert np.linalg.norm(bounded.weights) == pytest.approx(1.0, abs=1e-6)
    assert bounded.loss > fit.loss
    assert regret(float(np.sum((X @ bounded.weights - y) ** 2)), X, y, 2, radius=1.0) == pytest.approx(0, abs=1e-6)


def test_stream_arrays_are_the_rounds_a_stream_session_plays() -> None:
    dataset = load_dataset("online-sparse", {"d": 10, "k": 2}, 4)
    X, y = stream_arrays(dataset, "train", 4, 50)
    oracle = LocalOracle(dataset, protocol="online", budget=Budget(per_example=10), seed=4)
    for t in range(50):
        example, _ = oracle.next()
        np.testing.assert_allclose(oracle.observe(example, range(10)), X[t])
        assert oracle.predict(example, 0.0) == pytest.approx(y[t])
