"""Dataset endpoints: list and describe (never values); admins add and remove user datasets."""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, Path, Query

from budgetlab.contract.datasets import DatasetAdd, DatasetInfo, DatasetList
from budgetlab.datasets import (
    DatasetError,
    UnknownDataset,
    add_dataset,
    describe,
    list_datasets,
    parse_dataset_spec,
    remove_dataset,
)
from budgetlab.errors import Code, refusal, responses
from server.deps import ADMIN_REFUSALS, Admin

router = APIRouter(prefix="/v1/datasets", tags=["datasets"])


@router.get("", response_model=DatasetList)
def datasets() -> DatasetList:
    """Every dataset the oracle serves, built in and added, and the parameterised families; never a value."""
    return list_datasets()


@router.get("/{spec}", response_model=DatasetInfo,
            responses=responses(Code.UNKNOWN_DATASET, Code.INVALID_DATASET_PARAMS, Code.INVALID_REQUEST))
def dataset(
    spec: Annotated[str, Path(min_length=1, max_length=300, description="name or name:key=value,...")],
    seed: Annotated[int, Query(ge=0, le=2**32 - 1)] = 0,
) -> DatasetInfo:
    """What a dataset is with these parameters (sizes n_train and n_test, dimension d, task, costs); never a value."""
    try:
        name, params = parse_dataset_spec(spec)
        return describe(name, params, seed)
    except UnknownDataset as exc:
        raise refusal(Code.UNKNOWN_DATASET, str(exc)) from None
    except DatasetError as exc:
        raise refusal(Code.INVALID_DATASET_PARAMS, str(exc)) from None


@router.post("", status_code=201, response_model=DatasetInfo, dependencies=[Admin],
             responses=responses(*ADMIN_REFUSALS, Code.TOO_LARGE, Code.INVALID_DATASET))
def add(body: DatasetAdd) -> DatasetInfo:
    """Admin: add a user dataset from a file on the oracle's machine."""
    try:
        return add_dataset(FilePath(body.path), body.target, body.name, test_fraction=body.test_fraction)
    except (DatasetError, OSError, ValueError) as exc:
        raise refusal(Code.INVALID_DATASET, str(exc)) from None


@router.delete("/{name}", status_code=204, dependencies=[Admin],
               responses=responses(*ADMIN_REFUSALS, Code.UNKNOWN_DATASET))
def remove(name: Annotated[str, Path(min_length=1, max_length=100)]) -> None:
    """Admin: remove a user dataset (built-in ones stay); its open sessions then answer 409 dataset_unavailable."""
    try:
        remove_dataset(name)
    except DatasetError as exc:
        raise refusal(Code.UNKNOWN_DATASET, str(exc)) from None
