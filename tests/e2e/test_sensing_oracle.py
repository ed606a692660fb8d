"""The active-sensing environment on a real oracle (issue #38 item 1): the same actions give the same observations and
rewards as in memory, over HTTP and over the session stream; the oracle's ledger holds what the environment says it
paid (each episode's rewards are minus the weighted cost its rows charged and the loss its prediction row records),
and its audit proves the evaluation read only what it paid for, each value once, within the session's budgets."""

from __future__ import annotations

from collections import Counter

import pytest

from budgetlab.oracle_client import OracleSession
from budgetlab.sensing import SensingEnv
from tests.ground.test_sensing_env import COSTS, SMALL, episode_sums, play

pytestmark = pytest.mark.process

EPISODES = 12
SETTINGS = {"dataset": "cube", "dataset_params": SMALL, "reads": 3, "costs": COSTS, "cost_weight": 0.4}


@pytest.mark.parametrize("stream", [False, True], ids=["http", "stream"])
def test_the_same_actions_give_the_same_episodes_in_memory_and_on_a_real_oracle(shared_oracle_url: str,
                                                                                stream: bool) -> None:
    local = SensingEnv(**SETTINGS)
    in_memory = play(local, EPISODES, seed=5)
    env = SensingEnv(**SETTINGS, oracle=shared_oracle_url, stream=stream)
    assert play(env, EPISODES, seed=5) == in_memory
    assert isinstance(env.session, OracleSession)
    # The same rows recorded: the in-memory session counts those the oracle writes.
    assert env.session.get().ledger_rows == local.session.get().ledger_rows == len(list(env.session.iter_ledger()))
    assert env.session.transport == ("websocket" if stream else "http")
    env.close()


def test_the_ledger_holds_each_episodes_cost_and_loss_and_its_audit_the_reads(shared_oracle_url: str) -> None:
    env = SensingEnv(**SETTINGS, oracle=shared_oracle_url)
    sums = episode_sums(play(env, EPISODES, seed=6))
    session = env.session
    assert isinstance(session, OracleSession)
    rows = list(session.iter_ledger())
    charged: Counter[int] = Counter()
    losses: dict[int, float] = {}
    for row in rows:
        if row.kind == "observe" and row.example is not None:
            charged[row.example] += row.cost
        elif row.kind == "predict" and row.example is not None:
            losses[row.example] = float(row.value != row.payload["label"])  # the 0-1 loss of a class
    assert len(sums) == EPISODES
    for total, info in sums.values():
        example = info["example"]
        assert info["cost"] == pytest.approx(charged[example], abs=1e-12)
        assert info.get("loss") == losses.get(example)
        assert total == pytest.approx(-0.4 * charged[example] - losses.get(example, 0.0), abs=1e-12)
    audit = session.audit()
    reads = sum(info["reads"] for _, info in sums.values())
    observed = [(row.example, row.attribute) for row in rows if row.kind == "observe"]
    assert audit.compliant and audit.chain_ok
    assert audit.attributes_recomputed == reads == len(observed) == len(set(observed))  # paid values, each once
    assert audit.max_attributes_per_example <= audit.per_example_limit == 3
    assert audit.predictions_recomputed == len(losses) == sum(1 for _, info in sums.values() if "loss" in info)
    env.close()
