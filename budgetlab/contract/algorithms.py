"""The learner's algorithms as it lists them: the paper and the algorithm each one is, and its parameters."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from budgetlab.contract.base import ParamValue
from budgetlab.contract.sessions import Protocol

# Which values fill the parameters a run does not give: "practical" (defaults that adapt to the data, see each
# algorithm's docstring) or "theory" (the theorems' constants, as the papers state them for the data's declared scale).
Defaults = Literal["practical", "theory"]
DEFAULTS_DESCRIPTION = ("which values fill the parameters not given: 'practical' (data-adaptive defaults that learn "
                        "on real data) or 'theory' (the theorems' constants)")
PARAM_SPEC_EXAMPLE = {"name": "phase1", "default": 0.1,
                      "description": "share m_1/m of the examples spent estimating the moments (the experiments' "
                                     "1/10)"}
ALGORITHM_INFO_EXAMPLE = {
    "id": "ddaerr-2phase", "name": "Two-Phased DDAERR",
    "paper": "Kukliansky & Shamir 2015, Attribute Efficient Linear Regression with Data-Dependent Sampling",
    "algorithm": "Algorithm 2", "protocol": "batch", "budget_kind": "local", "params": [PARAM_SPEC_EXAMPLE],
    "description": "Two-Phased DDAERR: AERR on m/10 examples while estimating E x², then DDAERR with the estimates."}


class ParamSpec(BaseModel):
    """A parameter an algorithm accepts (``params`` of a run)."""

    name: str = Field(description="the parameter's name, in the paper's notation", examples=["eta"])
    default: ParamValue | None = Field(description="its default; None: resolved from the theorem and the data",
                                       examples=[None])
    description: str = Field("", description="what it is, and how its default is chosen",
                             examples=["step size η; default Theorem 3.1's sqrt(k/(2dm)) / max||x||_2² with "
                                       "k = budget - 1"])


class AlgorithmInfo(BaseModel):
    """One of the papers' algorithms, or a plugin's, as the learner runs it."""

    id: str = Field(description="the id a run names it by", examples=["aerr"])
    name: str = Field(description="its name in the paper", examples=["AERR (Attribute Efficient Ridge Regression)"])
    paper: str = Field(description="the paper", examples=["Hazan & Koren 2012, Linear Regression with Limited "
                                                           "Observation"])
    algorithm: str = Field(..., description="where in the paper, e.g. 'Algorithm 1'", examples=["Algorithm 1"])
    protocol: Protocol = Field(description="batch (statistical learning) or online (regret)", examples=["batch"])
    budget_kind: Literal["local", "global", "full"] = Field(
        description="local: at most k attributes of each example; global: K attributes in all; full: a "
                    "full-information reference", examples=["local"])
    params: list[ParamSpec] = Field(description="the parameters it accepts", examples=[[PARAM_SPEC_EXAMPLE]])
    chooses_ahead: bool = Field(False, description="it chooses the attributes of the next examples before it sees "
                                                   "them (select_ahead): a batch run of it pays for many examples a "
                                                   "request", examples=[False])
    description: str = Field("", description="what it does", examples=["Attribute Efficient Ridge Regression: OGD on "
                                                                       "the L2 ball with uniform and w²-weighted "
                                                                       "attribute draws."])
    package: str = Field("budgetlab", description="the installed package that provides it: budgetlab, or a plugin's "
                                                  "distribution", examples=["budgetlab"])
    version: str | None = Field(None, description="that package's version (null: not installed as a distribution)",
                                examples=["0.1.0"])


class AlgorithmList(BaseModel):
    """Every algorithm the learner runs."""

    algorithms: list[AlgorithmInfo] = Field(description="the algorithms, by id", examples=[[ALGORITHM_INFO_EXAMPLE]])
