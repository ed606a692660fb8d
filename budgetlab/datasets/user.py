"""User datasets: files added once into the data directory and served memory-mapped.

``add`` accepts CSV (a header row; the target column by name or index, default the last column), NPY
(a 2-D matrix; the target a column index, default the last) and NPZ (arrays ``X`` and ``y``). It
streams the input in row chunks of about ``CHUNK_BYTES`` through plain file reads and writes, so adding
a file far larger than memory never holds it whole (a Fortran-ordered array, which cannot be read by
rows, is the exception: it is read whole). Each dataset becomes ``<data dir>/datasets/<name>/`` with
``X.npy`` (the input's numeric dtype, native byte order), ``y.npy`` (float64) and ``meta.json``; it
is written under a temporary name and renamed into place, so a failed add leaves nothing behind.

``load`` maps both arrays read-only (``np.load(mmap_mode="r")``): every worker process shares the page
cache and nothing is copied. The train/test split holds out the stored test fraction of the rows, drawn
from the session's seed, or from the dataset's own ``split_seed`` when one was given (then every session
sees the same split). A dataset may declare per-attribute costs (a list of d numbers, a mapping of
column names or attribute indices to prices, the others costing 1, or a file: ``read_costs_file``),
served as ``Dataset.costs``.

The data directory is ``$BUDGETLAB_DATA_DIR`` (read at each call), else the per-user data directory
(platformdirs: ``~/.local/share/budgetlab`` on Linux): never the working directory, so that the CLI and an
oracle started from another directory read the same datasets. ``./budgetlab-data``, the default of earlier
versions, is not read; where it holds datasets a warning says so once (``legacy_notice``).
"""

from __future__ import annotations

import csv
import difflib
import itertools
import json
import logging
import math
import os
import re
import shutil
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from budgetlab.contract.datasets import DatasetInfo, Task
from budgetlab.datasets.base import Dataset, DatasetError, split_rows, split_sizes

log = logging.getLogger("budgetlab.datasets")

DATA_DIR_ENV = "BUDGETLAB_DATA_DIR"
# The data directory of earlier versions, relative to the working directory: announced, never read.
LEGACY_DATA_DIR = "budgetlab-data"
CHUNK_BYTES = 32 << 20
FORMATS = (".csv", ".npy", ".npz")
DEFAULT_TEST_FRACTION = 0.2
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")

CostMap = Mapping[str, float] | Mapping[int, float]
Costs = Sequence[float] | CostMap | str | Path | None
Opener = Callable[[], AbstractContextManager[IO[bytes]]]


def data_dir(root: Path | str | None = None) -> Path:
    """``root`` if given, else ``$BUDGETLAB_DATA_DIR``, else the per-user data directory."""
    if root is not None:
        return Path(root)
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        found = Path(configured).expanduser()
    else:
        from platformdirs import user_data_dir

        found = Path(user_data_dir("budgetlab", appauthor=False))
    _announce_legacy(found)
    return found


def legacy_notice(root: Path) -> str | None:
    """What to say when ``./budgetlab-data`` (the default of earlier versions) holds datasets ``root`` is not."""
    legacy = Path.cwd() / LEGACY_DATA_DIR
    try:
        if legacy.resolve() == root.resolve():
            return None
    except OSError:
        return None
    found = names(legacy)
    if not found:
        return None
    return (f"{legacy} holds user datasets ({', '.join(found)}) that are not served: the data directory is {root} "
            f"(${DATA_DIR_ENV}, else the per-user default). Move them there (mkdir -p {root / 'datasets'} && "
            f"mv {legacy / 'datasets'}/* {root / 'datasets'}/) or set {DATA_DIR_ENV}={legacy}")


_ANNOUNCED: set[tuple[str, str]] = set()


def _announce_legacy(root: Path) -> None:
    """The legacy notice, once per process for each working directory and data directory."""
    try:
        key = (str(Path.cwd()), str(root))
    except OSError:  # the working directory was removed
        return
    if key in _ANNOUNCED:
        return
    _ANNOUNCED.add(key)
    notice = legacy_notice(root)
    if notice:
        log.warning(notice)


def _home(name: str, root: Path) -> Path:
    return root / "datasets" / name


def names(root: Path) -> list[str]:
    base = root / "datasets"
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if not p.name.startswith(".") and (p / "meta.json").is_file())


def exists(name: str, root: Path) -> bool:
    return bool(_SAFE_NAME.fullmatch(name)) and (_home(name, root) / "meta.json").is_file()


def version(name: str, root: Path) -> tuple[int, int]:
    """Changes whenever the dataset is removed and added again (part of the registry's cache key)."""
    st = (_home(name, root) / "meta.json").stat()
    return st.st_ino, st.st_mtime_ns


def _meta(name: str, root: Path) -> dict[str, Any]:
    try:
        meta: dict[str, Any] = json.loads((_home(name, root) / "meta.json").read_text())
        return meta
    except FileNotFoundError:
        raise DatasetError(f"no user dataset {name!r} in {root}") from None
    except json.JSONDecodeError:
        raise DatasetError(f"user dataset {name!r} is damaged: its meta.json is not JSON") from None


def split_statement(test_fraction: float, split_seed: int | None) -> str:
    """How a user dataset's train/test split is drawn, in the words ``add`` and every listing use."""
    drawn = ("drawn from the session's seed" if split_seed is None
             else f"fixed by split seed {split_seed}, the same for every session")
    return f"{test_fraction:.0%} of the rows held out for testing, {drawn}"


def _description(meta: dict[str, Any]) -> str:
    return f"{meta['description']}; {split_statement(meta['test_fraction'], meta.get('split_seed'))}"


def info(name: str, root: Path) -> DatasetInfo:
    meta = _meta(name, root)
    n_train, n_test = split_sizes(meta["n"], meta["test_fraction"])
    return DatasetInfo(name=name, description=_description(meta), task=meta["task"], n_train=n_train,
                       n_test=n_test, n_attributes=meta["d"], costs=meta["costs"], source=meta["source"])


def load(name: str, seed: int, root: Path) -> Dataset:
    meta = _meta(name, root)
    home = _home(name, root)
    X = np.load(home / "X.npy", mmap_mode="r")
    y = np.load(home / "y.npy", mmap_mode="r")
    if X.shape != (meta["n"], meta["d"]) or y.shape != (meta["n"],):
        raise DatasetError(f"user dataset {name!r} is damaged: its arrays do not match meta.json")
    split_seed = meta.get("split_seed")
    train, test = split_rows(meta["n"], meta["test_fraction"], seed if split_seed is None else split_seed)
    costs = None if meta["costs"] is None else np.asarray(meta["costs"], dtype=np.float64)
    return Dataset(name=name, description=_description(meta), task=meta["task"], X=X, y=y, train_rows=train,
                   test_rows=test, costs=costs, source=meta["source"])


def remove(name: str, root: Path) -> None:
    if not exists(name, root):
        found = names(root)
        close = difflib.get_close_matches(name, found, n=2)
        raise DatasetError(f"no user dataset {name!r} in the data directory {root}; " + (
            f"did you mean {' or '.join(map(repr, close))}?" if close else
            f"it holds {', '.join(found)}" if found else "it holds none"))
    shutil.rmtree(_home(name, root))


def _taken(name: str, root: Path) -> DatasetError:
    # Names the folder, and how it goes: an oracle's data directory is its admin's to change, over HTTP.
    return DatasetError(f"a user dataset named {name!r} already exists in {_home(name, root)}: choose another name, "
                        f"or remove it first (budgetlab datasets remove {name}; on an oracle, its admin's DELETE "
                        f"/v1/datasets/{name})")


# --- adding ---------------------------------------------------------------------------------------


@dataclass
class _Source:
    """An input file seen as n rows of d attributes plus a target, readable in row chunks."""

    n: int
    d: int
    dtype: np.dtype
    target: str
    chunks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]
    # The attributes' column names where the file has a header (CSV), in attribute order; else None.
    columns: list[str] | None = None


def add(
    path: Path,
    name: str,
    root: Path,
    *,
    target: str | int | None = None,
    test_fraction: float = DEFAULT_TEST_FRACTION,
    split_seed: int | None = None,
    costs: Costs = None,
) -> DatasetInfo:
    """Store ``path`` as user dataset ``name``; the caller has checked that the name is not a built-in."""
    path = Path(path)
    if not _SAFE_NAME.fullmatch(name):
        raise DatasetError(f"dataset name {name!r} is not allowed: use 1-100 letters, digits, '_', '-' or '.', "
                           "starting with a letter or digit")
    if exists(name, root):
        raise _taken(name, root)
    if not 0.0 < test_fraction < 1.0:
        raise DatasetError(f"test_fraction must be strictly between 0 and 1; got {test_fraction}")
    if split_seed is not None and (isinstance(split_seed, bool) or not 0 <= split_seed < 2**32):
        raise DatasetError(f"split_seed must be an integer in [0, 2^32); got {split_seed!r}")
    if not path.is_file():
        raise DatasetError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DatasetError(f"cannot read {path.name}: user datasets are {', '.join(FORMATS)} files")
    source = {".csv": _csv_source, ".npy": _npy_file_source, ".npz": _npz_source}[suffix](path, target)
    n_train, n_test = split_sizes(source.n, test_fraction)
    if n_train < 1 or n_test < 1:
        raise DatasetError(f"{source.n} rows leave no training or no test example at test_fraction {test_fraction}")
    declared = _read_costs(costs, source.d, source.columns)

    staging = root / "datasets" / f".adding-{name}-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    try:
        task = _write_arrays(source, staging)
        meta = {"name": name, "description": f"user dataset from {path.name} (target {source.target})",
                "source": f"user file {path.name}", "task": task, "n": source.n, "d": source.d,
                "test_fraction": test_fraction, "split_seed": split_seed, "target": source.target,
                "costs": declared}
        (staging / "meta.json").write_text(json.dumps(meta, indent=1))
        try:
            staging.rename(_home(name, root))
        except OSError:
            raise _taken(name, root) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return info(name, root)


def _write_arrays(source: _Source, home: Path) -> Task:
    """Stream the source into X.npy and y.npy; the task is classification when every target is -1 or +1."""
    signs_only = True
    rows = 0
    with _npy_writer(home / "X.npy", source.dtype, (source.n, source.d)) as fx, \
            _npy_writer(home / "y.npy", np.dtype(np.float64), (source.n,)) as fy:
        for X, y in source.chunks():
            X = np.ascontiguousarray(X, dtype=source.dtype)
            y = np.ascontiguousarray(y, dtype=np.float64)
            if (X.dtype.kind == "f" and not np.isfinite(X).all()) or not np.isfinite(y).all():
                raise DatasetError(f"rows {rows}..{rows + len(X) - 1} hold a NaN or infinite value")
            signs_only = signs_only and bool(np.all(np.abs(y) == 1.0))
            fx.write(X.data)
            fy.write(y.data)
            rows += len(X)
    if rows != source.n:
        raise DatasetError(f"expected {source.n} rows, read {rows}")
    return "classification" if signs_only else "regression"


def _npy_writer(path: Path, dtype: np.dtype, shape: tuple[int, ...]) -> IO[bytes]:
    f = open(path, "wb")  # closed by the caller's with-statement
    np.lib.format.write_array_header_1_0(
        f, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    )
    return f


def _stored_dtype(dtype: np.dtype, what: str) -> np.dtype:
    if dtype.fields is not None or dtype.kind not in "biuf":
        raise DatasetError(f"{what} must hold real numbers; its dtype is {dtype}")
    if dtype.kind == "f" and dtype.itemsize > 8:
        return np.dtype(np.float64)
    return dtype.newbyteorder("=")


def _column(target: str | int | None, columns: Sequence[str] | int) -> int:
    """Index of the target column (by name where columns are named); default the last column."""
    count = columns if isinstance(columns, int) else len(columns)
    if target is None:
        return count - 1
    if not isinstance(columns, int) and isinstance(target, str) and target in columns:
        return list(columns).index(target)
    try:
        index = int(target)
    except ValueError:
        known = f"use a column index below {count}" if isinstance(columns, int) else f"the columns are {columns}"
        raise DatasetError(f"no target column {target!r}; {known}") from None
    if not -count <= index < count:
        raise DatasetError(f"target column {index} is out of range for {count} columns")
    return index % count


def _split_target(block: np.ndarray, column: int) -> tuple[np.ndarray, np.ndarray]:
    return np.delete(block, column, axis=1), block[:, column]


def _rows_per_chunk(width: int, itemsize: int) -> int:
    return max(1, CHUNK_BYTES // max(1, width * itemsize))


def _npy_rows(open_file: Opener, what: str) -> tuple[tuple[int, ...], np.dtype, Callable[[int], Iterator[np.ndarray]]]:
    """Shape, dtype and a row-chunk reader of an NPY stream (a file or a zip member)."""
    with open_file() as f:
        try:
            major, minor = np.lib.format.read_magic(f)
            reader = {1: np.lib.format.read_array_header_1_0, 2: np.lib.format.read_array_header_2_0}.get(major)
            if reader is None:
                raise DatasetError(f"{what}: NPY format version {major}.{minor} is not supported")
            shape, fortran_order, dtype = reader(f)
        except ValueError as exc:
            raise DatasetError(f"{what} is not a valid NPY array: {exc}") from None

    def chunks(rows_per_chunk: int) -> Iterator[np.ndarray]:
        with open_file() as f:
            if fortran_order:
                whole = np.lib.format.read_array(f)
                for start in range(0, len(whole), rows_per_chunk):
                    yield whole[start : start + rows_per_chunk]
                return
            np.lib.format.read_magic(f)
            reader(f)
            width = int(np.prod(shape[1:], dtype=np.int64))
            for start in range(0, shape[0], rows_per_chunk):
                count = min(rows_per_chunk, shape[0] - start)
                raw = f.read(count * width * dtype.itemsize)
                if len(raw) != count * width * dtype.itemsize:
                    raise DatasetError(f"{what} is truncated: its header promises {shape[0]} rows")
                yield np.frombuffer(raw, dtype=dtype).reshape((count, *shape[1:]))

    return shape, dtype, chunks


def _npy_file_source(path: Path, target: str | int | None) -> _Source:
    shape, dtype, chunks = _npy_rows(lambda: open(path, "rb"), path.name)
    if len(shape) != 2 or shape[1] < 2:
        raise DatasetError(f"{path.name} must be a 2-D matrix with a target column and at least one attribute; "
                           f"its shape is {shape}")
    stored = _stored_dtype(dtype, path.name)
    column = _column(target, shape[1])
    return _Source(
        n=shape[0], d=shape[1] - 1, dtype=stored, target=f"column {column}",
        chunks=lambda: (_split_target(b, column) for b in chunks(_rows_per_chunk(shape[1], dtype.itemsize))),
    )


def _npz_source(path: Path, target: str | int | None) -> _Source:
    if target is not None:
        raise DatasetError("an NPZ dataset carries its target as the array y; do not name a target column")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise DatasetError(f"{path.name} is not an NPZ archive") from None
    with archive:
        members = set(archive.namelist())
    if not {"X.npy", "y.npy"} <= members:
        raise DatasetError(f"{path.name} must hold arrays named X and y; it holds {sorted(members)}")

    def member(name: str) -> Opener:
        @contextmanager
        def open_member() -> Iterator[IO[bytes]]:
            with zipfile.ZipFile(path) as zipped, zipped.open(name) as f:
                yield f

        return open_member

    shape, dtype, x_chunks = _npy_rows(member("X.npy"), f"{path.name}:X")
    y_shape, y_dtype, y_chunks = _npy_rows(member("y.npy"), f"{path.name}:y")
    if len(shape) != 2 or shape[1] < 1 or y_shape != (shape[0],):
        raise DatasetError(f"{path.name}: X must be 2-D (n, d) and y 1-D (n,); got {shape} and {y_shape}")
    stored = _stored_dtype(dtype, f"{path.name}:X")
    _stored_dtype(y_dtype, f"{path.name}:y")
    rows = _rows_per_chunk(shape[1], dtype.itemsize)
    return _Source(n=shape[0], d=shape[1], dtype=stored, target="y",
                   chunks=lambda: zip(x_chunks(rows), y_chunks(rows), strict=True))


def _csv_source(path: Path, target: str | int | None) -> _Source:
    with open(path, newline="") as f:
        header = next(csv.reader(f), None)
        if not header or len(header) < 2:
            raise DatasetError(f"{path.name} needs a header row naming a target and at least one attribute column")
        n = sum(1 for line in f if line.strip())
    columns = [c.strip() for c in header]
    column = _column(target, columns)
    rows = _rows_per_chunk(len(columns), 8)

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        with open(path, newline="") as f:
            next(csv.reader(f))
            lines = (line for line in f if line.strip())
            for start in range(0, n, rows):
                batch = list(itertools.islice(lines, rows))
                try:
                    block = np.loadtxt(batch, delimiter=",", quotechar='"', comments=None, ndmin=2,
                                       dtype=np.float64)
                except ValueError as exc:
                    raise DatasetError(f"{path.name}, data rows from {start + 1}: {exc}") from None
                if block.shape[1] != len(columns):
                    raise DatasetError(f"{path.name}, data rows from {start + 1}: expected {len(columns)} "
                                       f"columns, found {block.shape[1]}")
                yield _split_target(block, column)

    return _Source(n=n, d=len(columns) - 1, dtype=np.dtype(np.float64), target=columns[column], chunks=chunks,
                   columns=[c for i, c in enumerate(columns) if i != column])


def read_costs_file(path: Path | str) -> list[float] | dict[str, float]:
    """Prices from a file: a .npy or text file of d numbers (one per attribute), or a CSV whose header is
    ``column,cost`` and whose rows price columns by name or attribute index (the others cost 1)."""
    path = Path(path)
    try:
        if path.suffix.lower() == ".npy":
            return [float(c) for c in np.load(path, allow_pickle=False).ravel()]
        with open(path, newline="") as f:
            rows = [row for row in csv.reader(f) if row and any(cell.strip() for cell in row)]
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read costs from {path}: {exc}") from None
    if rows and [cell.strip().lower() for cell in rows[0]] == ["column", "cost"]:
        priced: dict[str, float] = {}
        for line, row in enumerate(rows[1:], start=2):
            if len(row) != 2:
                raise DatasetError(f"{path.name}, line {line}: expected 'column,cost', got {','.join(row)!r}")
            priced[row[0].strip()] = _price(row[1], f"{path.name}, line {line}")
        return priced
    return [_price(cell, path.name) for row in rows for cell in row]


def _price(text: str | float, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DatasetError(f"{where}: {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise DatasetError(f"{where}: a cost must be a finite non-negative number; got {text!r}")
    return value


def _read_costs(costs: Costs, d: int, columns: list[str] | None = None) -> list[float] | None:
    """The d prices ``costs`` declares (see ``add``); None when it declares none."""
    if costs is None:
        return None
    if isinstance(costs, str | Path):
        costs = read_costs_file(costs)
    if isinstance(costs, Mapping):
        return _priced_columns(costs, d, columns)
    try:
        values = np.asarray(costs, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise DatasetError("costs must be numbers") from None
    if values.shape != (d,) or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise DatasetError(f"costs must be {d} finite non-negative numbers (one per attribute); got {values.size}")
    return [float(c) for c in values]


def _priced_columns(costs: CostMap, d: int, columns: list[str] | None) -> list[float]:
    """d prices from {column name or attribute index: price}: the attributes not named cost 1."""
    prices = [1.0] * d
    for key, price in costs.items():
        where = str(key).strip()
        if columns is not None and where in columns:
            index = columns.index(where)
        else:
            try:
                index = int(where)
            except ValueError:
                known = f"the attribute columns are {', '.join(columns)}" if columns else f"use indices 0..{d - 1}"
                raise DatasetError(f"cannot price column {where!r}: {known}") from None
            if not 0 <= index < d:
                raise DatasetError(f"cannot price attribute {index}: the attributes are numbered 0..{d - 1}")
        prices[index] = _price(price, f"the cost of {where}")
    return prices
