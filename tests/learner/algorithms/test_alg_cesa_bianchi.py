"""AER (Fig. 2) and Baseline (Fig. 1) of Cesa-Bianchi, Shalev-Shwartz, Shamir (2011)."""

from __future__ import annotations

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.datasets.base import Dataset
from learner.algorithms import ParamError, Problem, get_algorithm
from learner.algorithms.cesa_bianchi_2011.aer import AER
from learner.algorithms.cesa_bianchi_2011.aer_baseline import AERBaseline, largest_magnitude_eigenvalue
from learner.algorithms.shared.l1_projection import project_l1_ball
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

# Statistical checks compare a sample mean with its exact expectation; 4.5 standard errors per
# coordinate keeps the chance of a false alarm below ~1e-4 over all the coordinates tested.
STANDARD_ERRORS = 4.5


def sparse_regression(n_train: int = 3000, n_test: int = 1000, d: int = 12, seed: int = 0) -> Dataset:
    """||x||_∞ ≤ 1 (the paper's assumption) and a 3-sparse target with a little noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n_train + n_test, d))
    w_star = np.zeros(d)
    w_star[:3] = [1.0, -0.8, 0.6]
    y = X @ w_star + 0.05 * rng.standard_normal(n_train + n_test)
    return Dataset(name="sparse", description="", task="regression", X=X, y=y,
                   train_rows=np.arange(n_train), test_rows=np.arange(n_train, n_train + n_test))


def assert_unbiased(samples: np.ndarray, exact: np.ndarray) -> None:
    mean = samples.mean(axis=0)
    standard_error = samples.std(axis=0, ddof=1) / np.sqrt(len(samples))
    assert np.all(np.abs(mean - exact) <= STANDARD_ERRORS * standard_error + 1e-12), (mean, exact, standard_error)


def observe(selected: list[int], x: np.ndarray) -> dict[int, float]:
    return {j: float(x[j]) for j in selected}


@pytest.mark.parametrize("k", [4, 5])
def test_aer_gradient_estimate_is_unbiased(k: int) -> None:
    d, reps = 8, 10_000
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, d), 0.3
    aer = AER(Problem(d=d, k=k, n_examples=100), seed=2)
    aer.w = np.array([0.5, -0.25, 0.0, 0.1, 0.0, -0.05, 0.3, 0.0])
    gradients = np.empty((reps, d))
    y_hats = np.empty(reps)
    for r in range(reps):
        selected = aer.select()
        assert len(selected) <= k and len(set(selected)) == len(selected)
        subset, v, y_hat = aer.estimates(observe(selected, x))
        gradients[r] = 0.0
        gradients[r, subset] = 2 * (y_hat - y) * v
        y_hats[r] = y_hat
    assert_unbiased(y_hats[:, None], np.array([aer.w @ x]))
    assert_unbiased(gradients, 2 * (aer.w @ x - y) * x)


def test_aer_does_not_pay_for_the_inner_product_while_w_is_zero() -> None:
    aer = AER(Problem(d=30, k=6, n_examples=10), seed=0)
    selected = aer.select()
    assert len(selected) == 3
    _, _, y_hat = aer.estimates(observe(selected, np.ones(30)))
    assert y_hat == 0.0


def test_aer_lambda_with_theory_defaults_is_theorem_12_with_the_proofs_16d() -> None:
    d, k, m = 40, 4, 1000
    aer = AER(Problem(d=d, k=k, n_examples=m, defaults="theory"))
    assert aer.lam == pytest.approx(16 * d * np.sqrt(np.log(m) / (m * k)))
    assert AER(Problem(d=d, k=k, n_examples=m), lam=0.5).lam == 0.5


def test_aer_lambda_defaults_to_theorem_12s_optimum_with_the_measured_gradients() -> None:
    dataset = sparse_regression(n_train=300)
    d, k, m = dataset.d, 4, 300
    aer = AER(Problem(d=d, k=k, n_examples=m), seed=3)
    assert aer.lam == "adaptive"
    energy = 0.0
    for t, row in enumerate(dataset.train_rows[:200], start=1):
        x, y = dataset.X[row], float(dataset.y[row])
        selected = list(aer.select())
        observed = {j: float(x[j]) for j in selected}
        _, v, y_hat = aer.estimates(observed)
        energy += float(np.sum((2 * (y_hat - y) * v) ** 2))
        aer.update(observed, y)
        # λ_t = sqrt(2) (G_t / B) sqrt(log m / m), G_t² the mean ||g̃_s||² so far
        assert aer.lam_t == pytest.approx(np.sqrt(2) * np.sqrt(energy / t) / aer.radius * np.sqrt(np.log(m) / m))
    assert 0 < aer.lam_t < 16 * d * np.sqrt(np.log(m) / (m * k))


def test_aer_keeps_the_iterate_in_the_l1_ball_and_averages_it() -> None:
    dataset = sparse_regression(n_train=300)
    aer = AER(Problem(d=dataset.d, k=4, n_examples=300), seed=3, lam=0.05, radius=0.7)
    iterates = []
    for i in range(300):
        selected = aer.select()
        x = dataset.X[i]
        aer.update(observe(selected, x), float(dataset.y[i]))
        assert np.abs(aer.w).sum() <= 0.7 + 1e-9
        iterates.append(aer.current_weights())
    np.testing.assert_allclose(aer.weights, np.mean(iterates, axis=0), atol=1e-12)


@pytest.mark.parametrize("algorithm_id, k", [("aer", 4), ("aer", 3), ("aer-baseline", 4), ("aer-baseline", 5)])
def test_runs_within_the_local_budget(algorithm_id: str, k: int) -> None:
    dataset = sparse_regression(n_train=400, n_test=100)
    oracle = LocalOracle(dataset, budget=Budget(per_example=k), seed=0)
    result = run_algorithm(algorithm_id, oracle, seed=0)
    assert result.status == "finished", result.message
    assert result.examples == 400
    assert oracle.attributes <= 400 * k


def test_aer_learns_a_sparse_target() -> None:
    # Theorem 12's λ (about 2.7 here) shrinks w̄ towards 0 by design; a lighter λ, as the paper's
    # cross-validation would pick, shows the learning. Both must beat the zero predictor.
    dataset = sparse_regression(n_train=3000)
    tuned = run_algorithm("aer", LocalOracle(dataset, budget=Budget(per_example=4), seed=0), params={"lam": 0.5})
    theoretical = run_algorithm("aer", LocalOracle(dataset, budget=Budget(per_example=4), seed=0))
    assert tuned.final is not None and theoretical.final is not None
    assert tuned.final.normalized_mse < 0.5
    assert theoretical.final.normalized_mse < 0.95


def test_l1_projection_matches_its_characterisation() -> None:
    rng = np.random.default_rng(4)
    for _ in range(50):
        v = rng.standard_normal(15) * (rng.random(15) < 0.7)
        radius = float(rng.uniform(0.1, 3.0))
        u = project_l1_ball(v, radius)
        if np.abs(v).sum() <= radius:
            np.testing.assert_array_equal(u, v)
            continue
        # The projection is a soft threshold at the level τ where the L1 norm equals the radius.
        assert np.abs(u).sum() == pytest.approx(radius)
        tau = np.max(np.abs(v) - np.abs(u))
        np.testing.assert_allclose(u, np.sign(v) * np.maximum(np.abs(v) - tau, 0), atol=1e-12)


def test_baseline_unbiased_loss_estimate_matches_the_true_loss() -> None:
    d, k, reps = 6, 4, 20_000
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-1, 1, d), -0.4
    w = np.array([0.7, -0.2, 0.0, 0.4, 0.1, -0.3])
    baseline = AERBaseline(Problem(d=d, k=k, n_examples=10), seed=6, estimate="unbiased")
    losses = np.empty(reps)
    for r in range(reps):
        losses[r] = baseline.loss_estimate(observe(baseline.select(), x), y, w)
    assert_unbiased(losses[:, None], np.array([(w @ x - y) ** 2]))


def test_baseline_printed_estimate_misses_the_diagonal() -> None:
    # docs/papers.md: Fig. 1's I×J construction has E[A] = d/(d−1)(xx' − diag(x²)); its loss estimate is biased.
    d, k, reps = 6, 4, 20_000
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-1, 1, d), -0.4
    w = np.array([0.7, -0.2, 0.0, 0.4, 0.1, -0.3])
    printed = AERBaseline(Problem(d=d, k=k, n_examples=10), seed=6, estimate="printed")
    losses = np.array([printed.loss_estimate(observe(printed.select(), x), y, w) for _ in range(reps)])
    expected = d / (d - 1) * ((w @ x) ** 2 - np.sum(w**2 * x**2)) - 2 * y * (w @ x) + y**2
    assert_unbiased(losses[:, None], np.array([expected]))
    standard_error = losses.std(ddof=1) / np.sqrt(reps)
    assert abs(losses.mean() - (w @ x - y) ** 2) > 10 * standard_error


def test_baseline_objective_is_the_mean_of_the_example_estimates() -> None:
    dataset = sparse_regression(n_train=50)
    baseline = AERBaseline(Problem(d=dataset.d, k=4, n_examples=50), seed=7)
    w = np.linspace(-0.5, 0.5, dataset.d)
    per_example = []
    for i in range(50):
        observed = observe(baseline.select(), dataset.X[i])
        per_example.append(baseline.loss_estimate(observed, float(dataset.y[i]), w))
        baseline.update(observed, float(dataset.y[i]))
    assert baseline.objective(w) == pytest.approx(np.mean(per_example))


def test_baseline_both_variants_run_and_the_corrected_one_learns() -> None:
    dataset = sparse_regression(n_train=3000)
    results = {
        estimate: run_algorithm("aer-baseline", LocalOracle(dataset, budget=Budget(per_example=4), seed=0),
                                params={"estimate": estimate})
        for estimate in ("unbiased", "printed")
    }
    bounds = dataset.scale_bounds()
    radius = max(bounds.weight_norm1, bounds.max_label / bounds.max_abs)  # Theorem 6's ball for the declared scale
    for result in results.values():
        assert result.status == "finished"
        assert np.all(np.isfinite(result.weights))
        assert np.abs(result.weights).sum() <= radius + 1e-6
    assert results["unbiased"].final is not None and results["unbiased"].final.normalized_mse < 0.2


def test_baseline_rejects_an_unknown_estimate() -> None:
    with pytest.raises(ParamError):
        get_algorithm("aer-baseline")(Problem(d=5, k=2, n_examples=5), estimate="diagonal")


def test_paper_claim_fig4_aer_is_below_the_printed_baseline_on_mnist_3_vs_5() -> None:
    # Fig. 4 and the table: with 4 pixels per image, Baseline (Fig. 1 as printed, the default estimate) is much
    # worse than AER. Default (theoretical) parameters, one pass over the 900 training images. Measured normalised
    # test MSE over seeds 0-2: AER 0.98-1.00 (Theorem 12's λ keeps w̄ near 0), printed Baseline 1.23-2.11 (its
    # indefinite objective overshoots the zero predictor). Asserted: AER below Baseline on every seed, and the
    # mean gap above 0.15.
    scores: dict[str, list[float]] = {"aer": [], "aer-baseline": []}
    for seed in range(3):
        for algorithm, out in scores.items():
            oracle = LocalOracle("mnist-3v5", budget=Budget(per_example=4), seed=seed)
            result = run_algorithm(algorithm, oracle, seed=seed, eval_every=oracle.n_examples)
            assert result.status == "finished" and result.final is not None
            out.append(result.final.normalized_mse)
    aer, baseline = np.array(scores["aer"]), np.array(scores["aer-baseline"])
    assert np.all(aer < baseline), scores
    assert baseline.mean() - aer.mean() > 0.15, scores


def test_baselines_step_size_eigenvalue_skips_never_seen_attributes_and_keeps_the_whole_matrixs_value() -> None:
    rng = np.random.default_rng(5)
    block = rng.standard_normal((6, 6))
    block = block + block.T  # symmetric and indefinite, like the printed estimate
    A = np.zeros((20, 20))
    seen = [1, 4, 7, 8, 15, 19]
    A[np.ix_(seen, seen)] = block
    whole = float(np.max(np.abs(np.linalg.eigvalsh(A))))
    assert largest_magnitude_eigenvalue(A) == pytest.approx(whole, rel=1e-13)
    assert largest_magnitude_eigenvalue(block) == float(np.max(np.abs(np.linalg.eigvalsh(block))))  # no row zero
    assert largest_magnitude_eigenvalue(np.zeros((5, 5))) == 0.0
