"""The AFA evaluation's loop (``budgetlab sense``): for each dataset and seed, read the training split in full and
fit every policy on it (the Q-learning policy then trains on the environment), then for each number of attributes k,
one test session per policy whose local budget is k, ``examples`` episodes of it (its first examples in the seed's
order), and the audit of that session: the attributes the policy read are those the session paid for, each once,
at most k an example (on a real oracle, its ledger's audit). In memory or through an oracle, the same seeds give the
same sessions, so the same episodes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.datasets import DatasetInfo
from budgetlab.local_session import LocalSession
from learner.sensing.adapter import Episode, play_many
from learner.sensing.budget_predictor import BudgetPredictorPolicy
from learner.sensing.greedy import GreedyPolicy
from learner.sensing.policy import Policy
from learner.sensing.q_learning import QLearningPolicy, train
from learner.sensing.random_policy import RandomPolicy
from learner.sensing.static import StaticPolicy
from learner.sensing.training import TrainingRead, read_training_split

if TYPE_CHECKING:
    from budgetlab.sensing import SensingEnv

# name -> (seed, the largest k evaluated) -> a fresh policy.
POLICIES: dict[str, Callable[[int, int], Policy]] = {
    "random": lambda seed, k: RandomPolicy(seed),
    "static": lambda seed, k: StaticPolicy(length=k),
    "greedy": lambda seed, k: GreedyPolicy(),
    "budget": lambda seed, k: BudgetPredictorPolicy(),
    "q-learning": lambda seed, k: QLearningPolicy(seed),
}


@dataclass(frozen=True)
class Settings:
    """How much of each dataset an evaluation reads, and where."""

    budgets: tuple[int, ...] = (1, 2, 3, 4, 6, 8)
    examples: int = 500
    """Test episodes per session (at most the test split)."""
    train_examples: int = 2000
    rl_episodes: int = 3000
    rl_cost_weight: float = 0.01
    """lambda of the Q-learning policy's training episodes: a read is worth it if it removes 1 % of an error."""
    oracle: str | None = None
    stream: bool = False
    api_key: str | None = None


@dataclass(frozen=True)
class SessionAudit:
    """What an evaluation session's ledger (an oracle's audit) or counters (in memory) prove of its episodes."""

    session: str
    where: str
    compliant: bool
    reasons: tuple[str, ...]
    reads: int
    """Attributes the policy read, as the episodes saw them."""
    paid: int
    """Attributes the session paid for, as its ledger (or its counters in memory) adds them up."""
    max_per_example: int
    limit: int
    cost: float


@dataclass(frozen=True)
class Point:
    """One policy's test session on one dataset and seed at the local budget k."""

    dataset: str
    task: str
    policy: str
    seed: int
    budget: int
    episodes: tuple[Episode, ...]
    audit: SessionAudit

    @property
    def score(self) -> float:
        """Accuracy (classification) or the squared error over the zero predictor's (regression), over the
        episodes that predicted."""
        done = [e for e in self.episodes if e.loss is not None and e.label is not None]
        losses = np.array([e.loss for e in done], dtype=np.float64)
        if self.task == "classification":
            return float(1.0 - losses.mean()) if done else float("nan")
        zero = float(np.sum(np.square(np.array([e.label for e in done], dtype=np.float64))))
        return float(losses.sum() / zero) if zero > 0 else float(losses.mean())

    @property
    def mean_reads(self) -> float:
        return float(np.mean([len(e.reads) for e in self.episodes]))

    @property
    def mean_cost(self) -> float:
        return float(np.mean([e.cost for e in self.episodes]))


@dataclass(frozen=True)
class Training:
    """What fitting the policies on one dataset and seed read and paid."""

    dataset: str
    seed: int
    read: TrainingRead
    rl_episodes: int
    rl_cost: float
    audited: bool | None = None
    """Through an oracle, whether the training session's ledger passes its audit (None in memory)."""


def evaluate(dataset: str, params: dict[str, ParamValue], seed: int, policies: Sequence[str],
             settings: Settings, progress: Callable[[str], None] = lambda _: None) -> tuple[Training, list[Point]]:
    """Fit ``policies`` on the dataset's training split (seed ``seed``) and evaluate each at every budget; each
    stage is announced to ``progress`` before it starts (a full evaluation is minutes)."""
    from budgetlab.sensing import SensingEnv
    from budgetlab.sensing.sessions import SessionSpec, source

    where = source(settings.oracle, stream=settings.stream, api_key=settings.api_key)
    try:
        info = where.describe(SessionSpec(dataset, params, "test", Budget()), seed)
    finally:
        where.close()
    progress(f"reading {settings.train_examples:,} training examples in full")
    read, audited = _read_training(dataset, params, seed, settings)
    costs = np.asarray(info.costs or [1.0] * info.n_attributes, dtype=np.float64)
    top = max(settings.budgets)
    fitted: dict[str, Policy] = {}
    rl_cost = 0.0
    for name in policies:
        progress(f"fitting {name}" + (f" ({settings.rl_episodes:,} episodes)" if name == "q-learning" else ""))
        policy = fitted[name] = POLICIES[name](seed, top)
        policy.fit(read.X, read.y, costs, info.task)
        if isinstance(policy, QLearningPolicy):
            # Where the other sessions run: a user's dataset may be on the oracle alone.
            env = SensingEnv(dataset, params, split="train", seed=seed, reads=top, cost_weight=settings.rl_cost_weight,
                             oracle=settings.oracle, stream=settings.stream, api_key=settings.api_key)
            rl_cost = sum(cost for _, cost in train(policy, env, settings.rl_episodes, seed))
            env.close()
    training = Training(dataset, seed, read, settings.rl_episodes if "q-learning" in fitted else 0, rl_cost, audited)
    points = []
    for k in settings.budgets:
        progress(f"k = {k}: {settings.examples:,} test examples for each of {', '.join(policies)}")
        points += [_session(dataset, params, seed, info, name, fitted[name], k, settings) for name in policies]
    return training, points


def _read_training(dataset: str, params: dict[str, ParamValue], seed: int, settings: Settings,
                   ) -> tuple[TrainingRead, bool | None]:
    """The training split's first examples read in full, in memory or through the oracle (and there, whether the
    session's ledger passes its audit)."""
    if settings.oracle is None:
        return read_training_split(LocalSession.open(dataset, dataset_params=params, split="train", seed=seed),
                                   settings.train_examples), None
    from budgetlab.oracle_client import OracleClient

    with OracleClient(settings.oracle, api_key=settings.api_key) as client:
        session = client.open_session(dataset, dataset_params=params, split="train", seed=seed)
        try:
            return read_training_split(session, settings.train_examples), session.audit().compliant
        finally:
            session.close()


def _session(dataset: str, params: dict[str, ParamValue], seed: int, info: DatasetInfo, name: str, policy: Policy,
             k: int, settings: Settings) -> Point:
    from budgetlab.sensing import SensingEnv

    env = SensingEnv(dataset, params, split="test", seed=seed, reads=k, oracle=settings.oracle,
                     stream=settings.stream, api_key=settings.api_key)
    try:
        episodes = play_many(env, policy, min(settings.examples, info.n_test), seed)
        audit = audit_session(env, episodes, k)
    finally:
        env.close()
    return Point(dataset, info.task, name, seed, k, tuple(episodes), audit)


def audit_session(env: SensingEnv, episodes: Sequence[Episode], k: int) -> SessionAudit:
    """What the session's records say of the episodes: on an oracle its ledger's audit (the hash chain, each value
    charged once, the local budget, the spend recomputed from the rows) and its rows; in memory its counters and the
    cells it paid for. Either way, each example's attributes the policy read must be those the session paid for,
    and the cost the episodes paid what it spent."""
    session = env.session
    reads = sum(len(e.reads) for e in episodes)
    cost = float(sum(e.cost for e in episodes))
    if isinstance(session, LocalSession):
        cells: dict[int, list[int]] = {example: list(found) for example, found in session.paid.observed.items()}
        reasons: list[str] = []
        spent, compliant, where = session.get().spent.cost, True, "memory"
    else:
        report = session.audit()
        cells = {}
        for row in session.iter_ledger():
            if row.kind == "observe" and row.example is not None and row.attribute is not None:
                cells.setdefault(row.example, []).append(row.attribute)
        reasons = list(report.reasons)
        spent, compliant, where = report.spent_recomputed, report.compliant, "oracle"
    reasons += [f"example {e.example}: the policy read {sorted(e.reads)}, the session paid for "
                f"{sorted(cells.get(e.example, ()))}" for e in episodes
                if sorted(e.reads) != sorted(cells.get(e.example, ()))]
    paid = sum(len(found) for found in cells.values())
    most = max((len(set(found)) for found in cells.values()), default=0)
    if paid != reads:
        reasons.append(f"the episodes read {reads} attributes, the session paid for {paid}")
    if abs(spent - cost) > 1e-6 * max(1.0, cost):
        reasons.append(f"the episodes paid {cost:g}, the session's records add up to {spent:g}")
    if most > k:
        reasons.append(f"an example had {most} attributes read; the local budget is {k}")
    return SessionAudit(session=str(session.id), where=where, compliant=compliant and not reasons,
                        reasons=tuple(reasons), reads=reads, paid=paid, max_per_example=most, limit=k, cost=cost)
