"""Dataset endpoints: list and describe (never values); admins add and remove user datasets."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, Form, Path, Query, UploadFile
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

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
from budgetlab.datasets.user import DEFAULT_TEST_FRACTION, FORMATS, Costs, data_dir
from budgetlab.errors import Code, refusal, responses
from server.deps import ADMIN_REFUSALS, Admin

router = APIRouter(prefix="/v1/datasets", tags=["datasets"])
UPLOAD_PATH = "/v1/datasets/upload"


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
    """What a dataset is with these parameters (sizes n_train and n_test, n_attributes, task, costs); never a value."""
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


class DatasetUpload(BaseModel):
    """A dataset file uploaded by an admin (multipart form), and how to read it."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"file": "patients.csv", "name": "patients", "target": "outcome", "test_fraction": 0.2, "split_seed": 7,
         "costs": '{"blood_panel": 12.5, "x_ray": 40}'},
    ]})
    file: UploadFile = Field(description="the dataset: a .csv (with a header row), .npy or .npz file, named with its "
                                         "suffix", examples=["patients.csv"])
    name: str | None = Field(None, min_length=1, max_length=100, examples=["patients"],
                             description="the dataset's name (letters, digits, '_', '-', '.'); default the file's stem")
    target: str | None = Field(None, examples=["outcome", "-1"],
                               description="the label column: a CSV header name, or an index; default the last")
    test_fraction: float = Field(DEFAULT_TEST_FRACTION, gt=0, lt=1, examples=[0.2],
                                 description="share of the rows held out for testing")
    split_seed: int | None = Field(None, ge=0, le=2**32 - 1, examples=[7],
                                   description="fixes the train/test split for every session; default: drawn from "
                                               "each session's seed")
    costs: str | None = Field(None, examples=['{"blood_panel": 12.5, "x_ray": 40}', "[1, 1, 12.5, 40]"],
                              description="JSON: d prices, or {column name or attribute index: price} (the others "
                                          "cost 1)")


@router.post("/upload", status_code=201, response_model=DatasetInfo, dependencies=[Admin],
             responses=responses(*ADMIN_REFUSALS, Code.TOO_LARGE, Code.INVALID_DATASET))
async def upload(form: Annotated[DatasetUpload, Form(media_type="multipart/form-data")]) -> DatasetInfo:
    """Admin: add a user dataset from an uploaded file into the oracle's data directory (whole or not at all)."""
    file = form.file
    suffix = FilePath(file.filename or "").suffix.lower()
    if suffix not in FORMATS:
        raise refusal(Code.INVALID_DATASET, f"cannot read {file.filename!r}: user datasets are "
                                            f"{', '.join(FORMATS)} files, named with their suffix")
    try:
        prices = None if form.costs is None else json.loads(form.costs)
    except json.JSONDecodeError as exc:
        raise refusal(Code.INVALID_DATASET, f"costs is not JSON: {exc}") from None
    if prices is not None and not isinstance(prices, list | dict):
        raise refusal(Code.INVALID_DATASET, "costs must be a JSON list of prices or an object {column: price}")
    column: str | int | None = form.target
    if form.target is not None and suffix != ".csv" and form.target.strip().lstrip("-").isdigit():
        column = int(form.target)
    # Only the file name's last part is used, inside a fresh directory: an upload names no place on the oracle.
    filename = FilePath(file.filename or "").name
    return await run_in_threadpool(_add_upload, file, filename, form.name, column, form.test_fraction,
                                   form.split_seed, prices)


def _add_upload(file: UploadFile, filename: str, name: str | None, target: str | int | None, test_fraction: float,
                split_seed: int | None, costs: Costs) -> DatasetInfo:
    """Copy the upload beside the data directory's datasets and add it from there; the copy never outlives this."""
    root = data_dir()
    (root / "datasets").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".upload-", dir=root / "datasets") as staging:
        copy = FilePath(staging) / filename
        with open(copy, "wb") as out:
            shutil.copyfileobj(file.file, out, 1 << 20)
        try:
            return add_dataset(copy, target, name, test_fraction=test_fraction, split_seed=split_seed, costs=costs)
        except (DatasetError, OSError, ValueError) as exc:
            raise refusal(Code.INVALID_DATASET, str(exc)) from None
