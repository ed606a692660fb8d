"""A comparison written earlier, read back from its ``results.json``: its config, designs and every run's outcome,
so that its claims can be decided again under the current rules (``budgetlab claims DIR``) without running anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from budgetlab.contract.results import ComparisonResults, ResultsError
from client.comparison.claims import ClaimResult, evaluate_claims
from client.comparison.config import ClaimSpec, CompareConfig, Design, resolve_designs
from client.comparison.grid import RunOutcome
from client.comparison.summary import AlgorithmSummary, summarize
from client.console import UsageError


@dataclass
class Recorded:
    """What a results.json holds, as the report was built from it."""

    results: ComparisonResults
    config: CompareConfig
    designs: list[Design]
    outcomes: list[RunOutcome]

    def summaries(self) -> list[list[AlgorithmSummary]]:
        return [summarize(i, d, self.outcomes) for i, d in enumerate(self.designs)]

    def claims(self) -> list[ClaimResult]:
        """The claims decided on the recorded runs, as a report written now would decide them."""
        return evaluate_claims(self.config, self.designs, self.summaries(), quick=self.results.quick)


def read_recorded(out: Path, claims: list[ClaimSpec] | None = None) -> Recorded:
    """The comparison written into ``out``, with ``claims`` in place of its config's when given (a preset's claims
    as they are now); a ``UsageError`` says why it cannot be read back."""
    path = out / "results.json"
    try:
        results = ComparisonResults.read(path)
    except (ResultsError, OSError) as exc:
        raise UsageError(f"cannot read the comparison in {out}: {exc}") from None
    written = results.config.model_dump()
    if claims is not None:
        written["claims"] = [c.model_dump() for c in claims]
    try:
        config = CompareConfig.model_validate(written)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        found = f"{where}: {first['msg']}" if where else first["msg"]
        if claims is not None:
            raise UsageError(f"those claims do not fit the comparison in {out}: {found}") from None
        raise UsageError(f"{path}: its config no longer reads: {found} (decide a preset's current claims with "
                         "--preset NAME)") from None
    designs = resolve_designs(config)
    if [d.name for d in designs] != [d.name for d in results.designs]:
        raise UsageError(f"{path}: its designs do not match its own config's")
    outcomes = []
    for i, (design, record) in enumerate(zip(designs, results.designs, strict=True)):
        entries = {e.label: e for e in design.algorithms}
        for algorithm in record.algorithms:
            entry = entries.get(algorithm.label)
            if entry is None:
                raise UsageError(f"{path}: the algorithm {algorithm.label!r} of {design.name!r} is not in its config")
            outcomes += [RunOutcome(i, entry, run.seed, run.result, audit=run.audit or "",
                                    audit_compliant=run.audit_compliant, regret=run.regret,
                                    regret_curve=run.regret_curve, regret_missing=run.regret_missing or "",
                                    run_id=run.run_id) for run in algorithm.runs]
    return Recorded(results, config, designs, outcomes)
