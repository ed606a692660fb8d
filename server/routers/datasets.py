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

router = APIRouter(prefix="/v1/datasets", tags=["datasets"],
                   responses={code: {"model": ErrorBody} for code in (401, 403, 404, 422)})


class DatasetAdd(BaseModel):
    """Add a dataset from a file on the oracle's machine (CSV, NPY or NPZ)."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(..., min_length=1)
    name: str | None = Field(None, min_length=1, max_length=100)
    target: str | int | None = None
    test_fraction: float = Field(0.2, gt=0, lt=1)


@router.get("", response_model=DatasetList)
def datasets() -> DatasetList:
    return list_datasets()


@router.get("/{spec}", response_model=DatasetInfo)
def dataset(
    spec: Annotated[str, Path(min_length=1, max_length=300, description="name or name:key=value,...")],
    seed: Annotated[int, Query(ge=0, le=2**32 - 1)] = 0,
) -> DatasetInfo:
    try:
        name, params = parse_dataset_spec(spec)
        return describe(name, params, seed)
    except UnknownDataset as exc:
        raise OracleError(404, "unknown_dataset", str(exc)) from None
    except DatasetError as exc:
        raise OracleError(422, "invalid_dataset_params", str(exc)) from None


@router.post("", status_code=201, response_model=DatasetInfo, dependencies=[Admin])
def add(body: DatasetAdd) -> DatasetInfo:
    try:
        return add_dataset(FilePath(body.path), body.target, body.name, test_fraction=body.test_fraction)
    except (DatasetError, OSError, ValueError) as exc:
        raise OracleError(422, "invalid_dataset", str(exc)) from None


@router.delete("/{name}", status_code=204, dependencies=[Admin])
def remove(name: Annotated[str, Path(min_length=1, max_length=100)]) -> None:
    try:
        remove_dataset(name)
    except DatasetError as exc:
        raise OracleError(404, "unknown_dataset", str(exc)) from None
