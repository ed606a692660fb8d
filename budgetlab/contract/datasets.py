"""Datasets as the oracle describes them: what they are and the parameters they accept; never a value."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from budgetlab.contract.base import N_ATTRIBUTES_READ_AS, ParamValue

Task = Literal["regression", "classification"]

DATASET_PARAM_EXAMPLE = {"name": "alpha", "default": -1.0,
                         "description": "power-law exponent: u_i = i^alpha (the paper uses 0, -0.5, -1, -2)"}
DATASET_INFO_EXAMPLE = {
    "name": "powerlaw", "description": "Power-law Bernoulli attributes (alpha=-1, ridge scenario) with "
                                       "y = <w*, x> + noise (Kukliansky & Shamir 2015, section 5.1)",
    "task": "regression", "n_train": 20000, "n_test": 2000, "n_attributes": 500, "costs": None,
    "params": {"alpha": -1.0, "scenario": "ridge", "d": 500}, "accepted_params": [DATASET_PARAM_EXAMPLE],
    "source": "synthetic: Kukliansky & Shamir (2015), section 5.1"}


class DatasetParam(BaseModel):
    """A parameter a dataset accepts (``dataset_params`` of a session or a run)."""

    name: str = Field(description="the parameter's name", examples=["alpha"])
    default: ParamValue = Field(description="its value when not given", examples=[-1.0])
    description: str = Field("", description="what it sets",
                             examples=["power-law exponent: u_i = i^alpha (the paper uses 0, -0.5, -1, -2)"])


class DatasetInfo(BaseModel):
    """What a dataset is; never any of its values."""

    name: str = Field(description="the dataset's name, as sessions and runs name it", examples=["powerlaw"])
    description: str = Field(description="what the data is, and the paper it comes from",
                             examples=["Power-law Bernoulli attributes (alpha=-1, ridge scenario) with "
                                       "y = <w*, x> + noise (Kukliansky & Shamir 2015, section 5.1)"])
    task: Task = Field(description="regression (real labels) or classification (labels ±1, or the classes 0, 1, ... "
                                   "of a multi-class set such as cube)", examples=["regression"])
    n_train: int = Field(description="examples in the training split", examples=[20000])
    n_test: int = Field(description="examples in the test split", examples=[2000])
    n_attributes: int = Field(validation_alias=N_ATTRIBUTES_READ_AS, examples=[500],
                              description="attributes per example (the dimension d), numbered 0..d-1")
    costs: list[float] | None = Field(None, description="per-attribute costs declared by the dataset",
                                      examples=[[1.0, 1.0, 2.5]])
    params: dict[str, ParamValue] = Field(default_factory=dict, description="parameters in effect",
                                          examples=[{"alpha": -1.0, "scenario": "ridge", "d": 500}])
    accepted_params: list[DatasetParam] = Field(default_factory=list,
                                                description="the parameters this dataset accepts, with defaults",
                                                examples=[[DATASET_PARAM_EXAMPLE]])
    source: str = Field("", description="where the data comes from",
                        examples=["synthetic: Kukliansky & Shamir (2015), section 5.1"])


class DatasetList(BaseModel):
    """Every dataset the oracle serves; never a value."""

    datasets: list[DatasetInfo] = Field(description="built-in and user datasets, with their default parameters",
                                        examples=[[DATASET_INFO_EXAMPLE]])
    families: list[str] = Field(
        default_factory=list, description="parameterised names, e.g. 'mnist-AvB' for any two digits",
        examples=[["mnist-AvB", "fashion-AvB", "digits-AvB"]],
    )


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
