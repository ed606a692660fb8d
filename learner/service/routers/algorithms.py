"""What a run may name: ``GET /v1/algorithms``."""

from __future__ import annotations

import logging

from fastapi import APIRouter

from budgetlab.contract.algorithms import AlgorithmList
from learner.algorithms import ParamError, algorithms, describe, rescan
from learner.service.deps import Config
from learner.service.settings import LearnerSettings

log = logging.getLogger(__name__)
router = APIRouter(tags=["algorithms"])


def listing(settings: LearnerSettings) -> AlgorithmList:
    """Every algorithm a run may name, with its package and version; the entry points are read again, so a plugin
    installed while the learner runs is listed (one that cannot be imported is logged and left out)."""
    rescan()
    found = []
    for name in [*algorithms(), *settings.algorithm_targets]:
        try:
            found.append(describe(name))
        except (ParamError, ValueError) as exc:  # ValueError: a plugin's description that does not validate
            log.warning("algorithm %s is not listed: %s", name, exc)
    return AlgorithmList(algorithms=found)


@router.get("/v1/algorithms", response_model=AlgorithmList)
def list_algorithms(settings: Config) -> AlgorithmList:
    """budgetlab's algorithms, the installed plugins' and the allow-listed targets, with package and version."""
    return listing(settings)
