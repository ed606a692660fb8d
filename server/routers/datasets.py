"""Dataset endpoints: list and describe (never values); admins add and remove user datasets."""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from budgetlab.datasets import (
    DatasetError,
    UnknownDataset,
    add_dataset,
    describe,
    list_datasets,
    parse_dataset_spec,
    remove_dataset,
)
from budgetlab.errors import OracleError
from budgetlab.models import DatasetInfo, DatasetList, ErrorBody
from server.deps import Admin

router = APIRouter(prefix="/v1/datasets", tags=["datasets"])

# The refusals each endpoint can answer; every one has the body ``ErrorBody``.
UNAUTHORIZED = {"model": ErrorBody, "description": "unauthorized: no bearer token, or a malformed one"}
FORBIDDEN = {"model": ErrorBody, "description": "admin_disabled: the oracle has no admin token "
                                                "(BUDGETLAB_ADMIN_TOKEN); forbidden: this is not the admin token"}
UNKNOWN = {"model": ErrorBody, "description": "unknown_dataset: no dataset or family has this name"}
INVALID = {"model": ErrorBody, "description": "invalid_request: the path, query or body does not validate"}


class DatasetAdd(BaseModel):
    """Add a dataset from a file on the oracle's machine (CSV, NPY or NPZ)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"path": "/data/housing.csv", "name": "housing", "target": "price", "test_fraction": 0.2},
    ]})
    path: str = Field(..., min_length=1, description="the file on the oracle's machine: .csv, .npy or .npz",
                      examples=["/data/housing.csv"])
    name: str | None = Field(None, min_length=1, max_length=100, examples=["housing"],
                             description="the dataset's name (letters, digits, '_', '-', '.'); default the file's stem")
    target: str | int | None = Field(None, examples=["price", -1],
                                     description="the label column, by name (CSV header) or index; default the last")
    test_fraction: float = Field(0.2, gt=0, lt=1, examples=[0.2],
                                 description="fraction of the rows held out as the test split")


@router.get("", response_model=DatasetList)
def datasets() -> DatasetList:
    """Every dataset the oracle serves, built in and added, and the parameterised families; never a value."""
    return list_datasets()


@router.get("/{spec}", response_model=DatasetInfo, responses={
    404: UNKNOWN,
    422: {"model": ErrorBody, "description": "invalid_dataset_params: a parameter the dataset does not accept, or "
                                             "a value out of its range; invalid_request: see detail"},
})
def dataset(
    spec: Annotated[str, Path(min_length=1, max_length=300, description="name or name:key=value,...")],
    seed: Annotated[int, Query(ge=0, le=2**32 - 1)] = 0,
) -> DatasetInfo:
    """What a dataset is with these parameters (sizes n_train and n_test, dimension d, task, costs); never a value."""
    try:
        name, params = parse_dataset_spec(spec)
        return describe(name, params, seed)
    except UnknownDataset as exc:
        raise OracleError(404, "unknown_dataset", str(exc)) from None
    except DatasetError as exc:
        raise OracleError(422, "invalid_dataset_params", str(exc)) from None


@router.post("", status_code=201, response_model=DatasetInfo, dependencies=[Admin], responses={
    401: UNAUTHORIZED,
    403: FORBIDDEN,
    413: {"model": ErrorBody, "description": "too_large: the body is larger than the oracle's limit "
                                             "(BUDGETLAB_MAX_BODY_BYTES)"},
    422: {"model": ErrorBody, "description": "invalid_dataset: the file cannot be read as a dataset, or the name "
                                             "is taken; invalid_request: see detail"},
})
def add(body: DatasetAdd) -> DatasetInfo:
    """Admin: add a user dataset from a file on the oracle's machine."""
    try:
        return add_dataset(FilePath(body.path), body.target, body.name, test_fraction=body.test_fraction)
    except (DatasetError, OSError, ValueError) as exc:
        raise OracleError(422, "invalid_dataset", str(exc)) from None


@router.delete("/{name}", status_code=204, dependencies=[Admin],
               responses={401: UNAUTHORIZED, 403: FORBIDDEN, 422: INVALID, 404: {
                   "model": ErrorBody, "description": "unknown_dataset: no user dataset has this name (built-in "
                                                      "datasets cannot be removed)"}})
def remove(name: Annotated[str, Path(min_length=1, max_length=100)]) -> None:
    """Admin: remove a user dataset (built-in ones stay); its open sessions then answer 409 dataset_unavailable."""
    try:
        remove_dataset(name)
    except DatasetError as exc:
        raise OracleError(404, "unknown_dataset", str(exc)) from None
