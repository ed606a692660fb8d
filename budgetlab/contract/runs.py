"""A run of the learner: how it is asked for, where it stands, what it produced, and how runs are listed."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from budgetlab.contract.algorithms import DEFAULTS_DESCRIPTION, Defaults
from budgetlab.contract.base import SESSION_ID_EXAMPLE, ParamValue, Secret, Strict, UtcTime
from budgetlab.contract.budgets import Budget

CURVE_POINT_EXAMPLE = {"examples": 500, "attributes": 2000, "cost": 2000.0, "test_mse": 0.8412,
                       "normalized_mse": 0.4396, "zero_one": 0.213, "cumulative_loss": None}
TEST_SCORE_EXAMPLE = {"per_example": 4, "mse": 1.2034, "normalized_mse": 0.6289, "zero_one": 0.301,
                      "session": "9a1c0d7e5b4f4c2e8d6a3b1f0e9c7d5a"}
RUN_CREATE_EXAMPLE: JsonDict = {
    "dataset": "powerlaw", "dataset_params": {"d": 100}, "algorithm": "aerr", "params": {"eta": 0.01},
    "budget": {"per_example": 4}, "seed": 0, "max_examples": 2000, "test_budget": 4}
RUN_RESULT_EXAMPLE = {
    "algorithm": "aerr", "dataset": "powerlaw", "dataset_params": {"alpha": -1.0, "scenario": "ridge", "d": 100},
    "params": {"eta": 0.01}, "resolved_params": {"B": 2.236, "eta": 0.01}, "seed": 0, "status": "finished",
    "message": "", "weights": [0.98, -1.02, 0.0, 0.47], "bias": 0.0, "curve": [CURVE_POINT_EXAMPLE],
    "final": CURVE_POINT_EXAMPLE, "test_budget": TEST_SCORE_EXAMPLE, "session": SESSION_ID_EXAMPLE, "examples": 500,
    "attributes": 2000, "cost": 2000.0, "cumulative_loss": None, "wall_time": 1.3}
RUN_SUMMARY_EXAMPLE = {
    "id": "3f0b1c9e2d7a4e58", "status": "running", "algorithm": "aerr", "dataset": "powerlaw", "seed": 0,
    "budget": {"per_example": 4}, "progress_examples": 1200, "progress_attributes": 4800, "max_examples": 2000,
    "session": SESSION_ID_EXAMPLE, "message": "", "last_point": CURVE_POINT_EXAMPLE,
    "created_at": "2025-01-31T09:30:00Z", "ended_at": None}


class CurvePoint(BaseModel):
    """One point of a learning curve: the test error of the current predictor after so many examples."""

    examples: int = Field(description="training examples seen", examples=[500])
    attributes: int = Field(description="attributes paid for", examples=[2000])
    cost: float = Field(0.0, description="cost units spent", examples=[2000.0])
    test_mse: float = Field(description="full-information test MSE", examples=[0.8412])
    normalized_mse: float = Field(description="test MSE / the zero predictor's", examples=[0.4396])
    zero_one: float = Field(description="fraction of test examples with the wrong sign", examples=[0.213])
    cumulative_loss: float | None = Field(None, description="sum of the online losses so far (online protocol)",
                                          examples=[None])


RunStatus = Literal["pending", "queued", "running", "finished", "budget_exhausted", "oracle_unavailable", "failed",
                    "cancelled", "interrupted"]
# A run in one of these statuses has ended and will not change again ('interrupted': the learner stopped first).
FINAL_RUN_STATUSES: frozenset[str] = frozenset({"finished", "budget_exhausted", "oracle_unavailable", "failed",
                                                "cancelled", "interrupted"})
# A run that ended in one of these completed: its weights are the algorithm's answer (its budget running out is
# the setting of the papers, not a failure).
COMPLETED_RUN_STATUSES: frozenset[str] = frozenset({"finished", "budget_exhausted"})


class RunCreate(Strict):
    """Run one algorithm on a training session of an oracle, under a budget."""

    model_config = ConfigDict(json_schema_extra={"examples": [RUN_CREATE_EXAMPLE]})

    oracle_url: str | None = Field(None, min_length=1, description="default: the learner's ORACLE_URL",
                                   examples=["http://127.0.0.1:8000"])
    dataset: str = Field(..., min_length=1, description="a dataset of the oracle (GET /v1/datasets)",
                         examples=["powerlaw"])
    dataset_params: dict[str, ParamValue] = Field(default_factory=dict, examples=[{"d": 100}],
                                                  description="the dataset's parameters; the others take defaults")
    algorithm: str = Field(description="an algorithm's id (GET /v1/algorithms)", examples=["aerr"])
    params: dict[str, ParamValue] = Field(default_factory=dict, examples=[{"eta": 0.01}],
                                          description="the algorithm's parameters; the others take the defaults "
                                                      "`defaults` names")
    defaults: Defaults = Field("practical", description=DEFAULTS_DESCRIPTION, examples=["theory"])
    budget: Budget = Field(default_factory=Budget, description="the training session's budgets: the local budget k "
                                                               "(per_example), the global budget K (total)",
                           examples=[{"per_example": 4}])
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seeds the data, the stream order and the algorithm",
                      examples=[0])
    max_examples: int | None = Field(None, ge=1, description="stop after this many training examples (default: "
                                                             "the whole split)", examples=[2000])
    eval_every: int | None = Field(None, ge=1, description="examples between points of the learning curve "
                                                           "(default: about 20 points)", examples=[100])
    test_budget: int | None = Field(None, ge=1, description="also score through a test session with this k",
                                    examples=[4])
    api_key: Secret | None = Field(
        None, description="an account's API key on the oracle: the run's sessions draw on the account's allowance "
                          "(default: the learner's own, BUDGETLAB_LEARNER_API_KEY, else anonymous sessions); never "
                          "stored, shown back as ********", examples=[None])

    def key(self) -> str | None:
        """The API key the run's sessions are opened with, as text (None: the oracle's anonymous sessions)."""
        return None if self.api_key is None else self.api_key.get_secret_value()


class TestScore(BaseModel):
    """The run's predictor scored on a budget: a test session that observes at most k attributes of each example."""

    per_example: int = Field(description="the test-time budget k: attributes observed of each test example",
                             examples=[4])
    mse: float = Field(description="MSE of the predictions made on that budget", examples=[1.2034])
    normalized_mse: float = Field(description="mse / the zero predictor's MSE", examples=[0.6289])
    zero_one: float = Field(description="fraction of test examples with the wrong sign", examples=[0.301])
    session: str = Field(description="the test session's id on the oracle",
                         examples=["9a1c0d7e5b4f4c2e8d6a3b1f0e9c7d5a"])


class TuningReport(BaseModel):
    """How a run's parameters were chosen: a grid, each point fitted on training folds and scored on held-out ones,
    in sessions of their own that were paid for; what those sessions paid is the tuning's cost."""

    candidates: list[dict[str, ParamValue]] = Field(description="the grid's points, in order",
                                                    examples=[[{"eta": 0.001}, {"eta": 0.01}]])
    folds: list[list[int]] = Field(description="the validation blocks, as [start, stop) positions of the run's stream",
                                   examples=[[[720, 900]]])
    scores: list[float | None] = Field(description="each candidate's mean validation squared error (null: unscored)",
                                       examples=[[0.81, 0.64]])
    chosen: dict[str, ParamValue] = Field(description="the point with the lowest validation error (empty: none "
                                                      "scored, the run used its given parameters)",
                                          examples=[{"eta": 0.01}])
    sessions: int = Field(description="fit runs and validation sessions", examples=[4])
    attributes: int = Field(description="attributes the tuning's sessions paid for", examples=[8100])
    cost: float = Field(description="cost units they spent", examples=[8100.0])
    message: str = Field("", description="why nothing was chosen, if so", examples=[""])


class RunResult(BaseModel):
    """What one run produced; `budgetlab run --json` prints exactly this."""

    algorithm: str = Field(description="the algorithm's id", examples=["aerr"])
    dataset: str = Field(description="the dataset's name", examples=["powerlaw"])
    dataset_params: dict[str, ParamValue] = Field(
        default_factory=dict, description="as the oracle resolved them: typed, every parameter, defaults included",
        examples=[{"alpha": -1.0, "scenario": "ridge", "d": 100}])
    params: dict[str, ParamValue] = Field(default_factory=dict, description="the parameters the run was given",
                                          examples=[{"eta": 0.01}])
    defaults: Defaults = Field("practical", description=DEFAULTS_DESCRIPTION, examples=["theory"])
    resolved_params: dict[str, ParamValue | None] = Field(
        default_factory=dict, description="every parameter's value in effect (step size, radius, ...: the given ones "
                                          "and the theoretical defaults the algorithm resolved; a cross-validated "
                                          "α as last chosen); where a parameter has no one value over the run, the "
                                          "name of its rule ('adaptive', 'running'), which the algorithm accepts "
                                          "back: running again with these parameters and seed gives the same run",
        examples=[{"B": 2.236, "eta": 0.00042, "lambda_scale": "adaptive"}])
    seed: int = Field(description="the run's seed", examples=[0])
    status: RunStatus = Field(description="how the run ended; finished and budget_exhausted completed",
                              examples=["budget_exhausted"])
    message: str = Field("", description="why it ended so, in words (the oracle's refusal, ...)",
                         examples=["this request costs 4; 2 of the global budget of 20000 remains"])
    weights: list[float] = Field(default_factory=list, description="the predictor's weights w (length d)",
                                 examples=[[0.98, -1.02, 0.0, 0.47]])
    bias: float = Field(0.0, description="the predictor's bias b", examples=[0.0])
    curve: list[CurvePoint] = Field(default_factory=list, description="the learning curve, in examples seen",
                                    examples=[[CURVE_POINT_EXAMPLE]])
    final: CurvePoint | None = Field(None, description="the test error of the final predictor",
                                     examples=[CURVE_POINT_EXAMPLE])
    diagnosis: str | None = Field(
        None, description="for a completed run that ended near the zero predictor (normalised test MSE >= 0.95), one "
                          "line saying why and what to try; null when it learned",
        examples=["aer ended at 0.99 of the zero predictor's test MSE: the theorems' constants (defaults = theory) "
                  "are worst-case choices that barely move w in 900 examples; try the practical defaults or --tune "
                  "aer:lam=55,5.5e+02,5.5e+03"])
    test_budget: TestScore | None = Field(None, description="its score on a test-time budget, if one was asked",
                                          examples=[TEST_SCORE_EXAMPLE])
    tuning: TuningReport | None = Field(None, description="how its parameters were tuned, and what that paid (not "
                                                          "counted in attributes and cost: they are the run's own)",
                                        examples=[None])
    session: str | None = Field(None, description="the training session's id on the oracle",
                                examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    examples: int = Field(0, description="training examples seen", examples=[5000])
    attributes: int = Field(0, description="attributes paid for", examples=[20000])
    cost: float = Field(0.0, description="cost units spent", examples=[20000.0])
    cumulative_loss: float | None = Field(None, description="sum of the online losses (online protocol)",
                                          examples=[None])
    wall_time: float = Field(0.0, description="seconds the run took", examples=[12.7])


class RunInfo(BaseModel):
    """A run of the learner: where it stands, its learning curve so far, and its result once it ended."""

    id: str = Field(description="the run's id", examples=["3f0b1c9e2d7a4e58"])
    status: RunStatus = Field(description="pending, queued or running until it ends (see RunResult.status)",
                              examples=["running"])
    request: RunCreate = Field(description="the request that started it", examples=[RUN_CREATE_EXAMPLE])
    progress_examples: int = Field(0, description="training examples seen so far", examples=[1200])
    progress_attributes: int = Field(0, description="attributes paid for so far", examples=[4800])
    max_examples: int | None = Field(None, description="examples it will see at most", examples=[2000])
    session: str | None = Field(None, description="its training session's id on the oracle",
                                examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    result: RunResult | None = Field(None, description="what it produced, once it ended",
                                     examples=[RUN_RESULT_EXAMPLE])
    curve: list[CurvePoint] = Field(default_factory=list, description="the learning curve so far",
                                    examples=[[CURVE_POINT_EXAMPLE]])
    message: str = Field("", description="why it ended so, in words", examples=[""])


class RunSummary(BaseModel):
    """One run in a listing: where it stands, without its curve or weights (GET /v1/runs/{id} has them)."""

    id: str = Field(description="the run's id", examples=["3f0b1c9e2d7a4e58"])
    status: RunStatus = Field(description="pending, queued or running until it ends, then how it ended",
                              examples=["running"])
    algorithm: str = Field(description="the algorithm's id (GET /v1/algorithms)", examples=["aerr"])
    dataset: str = Field(description="the dataset's name on the oracle", examples=["powerlaw"])
    seed: int = Field(description="the run's seed (the algorithm's and its oracle session's)", examples=[0])
    budget: Budget = Field(description="the budget of its training session", examples=[{"per_example": 4}])
    progress_examples: int = Field(0, description="training examples seen so far", examples=[1200])
    progress_attributes: int = Field(0, description="attributes paid for so far", examples=[4800])
    max_examples: int | None = Field(None, description="examples it will see at most", examples=[2000])
    session: str | None = Field(None, description="its training session's id on the oracle (null before it opened)",
                                examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    message: str = Field("", description="why it ended so, in words (empty while it runs)",
                         examples=["this request costs 4; 2 of the global budget of 20000 remains"])
    last_point: CurvePoint | None = Field(None, description="the latest point of the learning curve",
                                          examples=[CURVE_POINT_EXAMPLE])
    created_at: UtcTime = Field(description="when the learner accepted it (UTC)",
                                 examples=["2025-01-31T09:30:00Z"])
    ended_at: UtcTime | None = Field(None, description="when it ended (UTC); null while pending, queued or running",
                                      examples=["2025-01-31T09:31:12Z"])


class RunPage(BaseModel):
    """Runs newest first; pass ``next`` back as ``cursor`` for the page after this one."""

    runs: list[RunSummary] = Field(description="this page's runs (at most `limit`), newest first",
                                   examples=[[RUN_SUMMARY_EXAMPLE]])
    next: str | None = Field(None, description="cursor of the next page; null on the last page",
                             examples=["1187"])
