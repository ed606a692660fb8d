"""The oracle's datasets: the papers' synthetic designs, bundled real data and user files.

Public API: ``load_dataset``, ``describe``, ``list_datasets``, ``parse_dataset_spec``, ``add_dataset``,
``remove_dataset`` (see ``registry``); ``Dataset`` and ``DatasetError`` (see ``base``).
"""

from budgetlab.datasets.base import Dataset, DatasetError, UnknownDataset, split_rows, stream_order
from budgetlab.datasets.registry import (
    add_dataset,
    clear_cache,
    describe,
    list_datasets,
    load_dataset,
    parse_dataset_spec,
    remove_dataset,
)

__all__ = [
    "Dataset",
    "DatasetError",
    "add_dataset",
    "clear_cache",
    "describe",
    "list_datasets",
    "load_dataset",
    "parse_dataset_spec",
    "remove_dataset",
    "split_rows",
    "stream_order",
    "UnknownDataset",
]
