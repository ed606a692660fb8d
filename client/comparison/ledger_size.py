"""What a comparison's runs will write to the oracle's ledger, said before they start.

Through the services every value a run pays for is a ledger row, kept for the audit: a full-information reference
on images reads every pixel of every image, and the 90 such runs of the Fashion-MNIST table left a ledger of 14 GB in
the output folder. ``compare`` says the size before anything starts, and where the services it starts would not
find the room on the output folder's disk, says that too (it does not refuse: the values are an upper bound, and a
run that pays for fewer writes less).

The size is bounded from the runs' own requests (``grid.jobs_for``: each run's dataset, budget and horizon): a run
of m training examples under a local budget k pays for at most m·min(k, d) values in m steps, and a test session
(``test_budget`` K) for n_test·K values more in n_test steps. On SQLite a step costs the ledger about 187 bytes (its
label and observation links, their 32-byte digests, the packed cells' key) and a value 16.4 (its attribute, its
value, its tag), measured on steps of 4, 50 and 784 attributes (within 1 % of the files: 5.0, 5.0 and 13.0 MB); the
constants below round them up. A small ledger is mostly its schema's pages and its write-ahead log: the estimate is
for the large ones, whose size matters.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from budgetlab.contract.base import ParamValue
from budgetlab.contract.datasets import DatasetInfo
from budgetlab.contract.runs import RunCreate
from learner.runner import run_horizon

STEP_BYTES = 200
VALUE_BYTES = 17
# Below this a comparison's ledger is not worth a line before it starts.
SAY_FROM_BYTES = 100 * 2**20


@dataclass(frozen=True)
class LedgerSize:
    """At most this many steps and values, and bytes of a SQLite ledger, for a comparison's runs."""

    runs: int
    steps: int
    values: int

    @property
    def bytes(self) -> int:
        return self.steps * STEP_BYTES + self.values * VALUE_BYTES


Describe = Callable[[str, dict[str, ParamValue]], DatasetInfo]


def ledger_size(requests: Sequence[RunCreate], describe: Describe) -> LedgerSize:
    """The most the runs of these requests can record (``describe``: what each dataset is)."""
    seen: dict[tuple[str, str], DatasetInfo] = {}
    steps = values = 0
    for request in requests:
        key = (request.dataset, repr(sorted(request.dataset_params.items())))
        info = seen.get(key) or seen.setdefault(key, describe(request.dataset, request.dataset_params))
        d = info.n_attributes
        examples = run_horizon(request.max_examples, info.n_train)
        per_example = request.budget.per_example
        steps += examples
        values += examples * min(d, per_example if per_example is not None else d)
        if request.test_budget is not None:
            steps += info.n_test
            values += info.n_test * min(d, request.test_budget)
    return LedgerSize(len(requests), steps, values)


def size_text(size: LedgerSize) -> str:
    return (f"at most {size.values:,} paid values in {size.steps:,} steps of {size.runs:,} runs: a ledger of about "
            f"{gigabytes(size.bytes)}")


def gigabytes(n: int) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"


def ledger_lines(size: LedgerSize, folder: Path | None, tuning: bool) -> list[str]:
    """What to say before the runs start: nothing for a small ledger; its size, and, for the services ``compare``
    starts (their ledger in ``folder``), whether that folder's disk has the room."""
    if size.bytes < SAY_FROM_BYTES:
        return []
    where = f"in {folder / 'ledger.db'}" if folder is not None else "on the oracle"
    lines = [f"the runs will record {size_text(size)} {where}"
             + (" (the tuning's runs come on top)" if tuning else "")]
    if folder is not None:
        free = free_bytes(folder)
        if size.bytes > free:
            lines.append(f"warning: {folder}'s disk has {gigabytes(free)} free, less than that: runs may fail when it "
                         "fills (the oracle then refuses what it cannot record); --local keeps no ledger, or give "
                         "--out a folder on a larger disk")
    return lines


def free_bytes(folder: Path) -> int:
    """Free bytes where ``folder`` is, or would be made (its nearest existing parent)."""
    here = folder.resolve()
    while not here.exists() and here != here.parent:
        here = here.parent
    stat = os.statvfs(here)
    return stat.f_bavail * stat.f_frsize
