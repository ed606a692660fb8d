"""The format-2 chain: what the store writes is what the offline verifier recomputes, and tampering is named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from budgetlab.engine import Event, Observations
from budgetlab.ledger import (
    GENESIS,
    Chain,
    ChainVerifier,
    link_digest,
    links_of_rows,
    observe_header,
    pack_cells,
    rows_of_links,
    value_tag,
    value_tags,
    verify_chain,
)

# Floats whose repr is easy to get wrong: negative zero, subnormals, long mantissas, integral values.
EXAMPLES = [0, 0, 7, 123456789012, 3]
ATTRIBUTES = [0, 41, 2, 999_999, 5]
VALUES = [-0.0, 5e-324, 0.1 + 0.2, 1e300, 2.0]
COSTS = [1.0, 0.25, 3.0, 1e-9, 1.0]


def _rows(chain: Chain) -> list[dict[str, Any]]:
    """The chain's rows as the store reads them back (links without their key, packed cells by link)."""
    cells = {seq: blob for _, _, seq, blob in chain.cells}
    return list(rows_of_links([link[1:] for link in chain.links], cells, None))


def _chain() -> Chain:
    return Chain("s1", 7, 0, GENESIS).record([
        Event("open", payload={"dataset": "x", "budget": {"per_example": 3}}),
        Event("label", example=0, value=-1.0, cost=0.5),
        Observations(EXAMPLES, ATTRIBUTES, VALUES, COSTS),
        Event("close"),
    ])


def test_one_link_per_event_and_per_example_of_an_observe() -> None:
    chain = _chain()
    assert [(link[1], link[2], link[6]) for link in chain.links] == [
        (0, "open", 1), (1, "label", 1), (2, "observe", 2), (4, "observe", 1), (5, "observe", 1),
        (6, "observe", 1), (7, "close", 1)]
    assert chain.seq == 8 and chain.values == 5 and len(chain.cells) == 4
    assert all(len(link[-1]) == 32 for link in chain.links)  # binary digests
    rows = _rows(chain)
    assert [r["seq"] for r in rows] == list(range(8))
    check = verify_chain("s1", rows)
    assert check.ok and check.head == chain.head and check.rows == 8


def test_recording_in_two_requests_continues_the_same_chain() -> None:
    whole = _chain()
    first = Chain("s1", 7, 0, GENESIS).record([Event("open", payload={"dataset": "x", "budget": {"per_example": 3}}),
                                               Event("label", example=0, value=-1.0, cost=0.5)])
    second = Chain("s1", 7, first.seq, first.head).record([Observations(EXAMPLES, ATTRIBUTES, VALUES, COSTS),
                                                           Event("close")])
    assert second.head == whole.head and first.links + second.links == whole.links


def test_an_altered_value_is_named_by_its_tag() -> None:
    rows = _rows(_chain())
    rows[3] = {**rows[3], "value": 1.5}  # the second value of the link at seq 2
    check = verify_chain("s1", rows)
    assert not check.ok and check.first_bad_seq == 3 and "altered" in check.reason


def test_an_altered_event_a_missing_and_an_inserted_row_are_named() -> None:
    rows = _rows(_chain())
    altered = [*rows[:1], {**rows[1], "cost": 0.0}, *rows[2:]]
    check = verify_chain("s1", altered)
    assert not check.ok and check.first_bad_seq == 1
    missing = rows[:3] + rows[4:]
    check = verify_chain("s1", missing)
    assert not check.ok and check.first_bad_seq == 3 and "missing" in check.reason
    inserted = rows[:4] + [rows[3]] + rows[4:]
    check = verify_chain("s1", inserted)
    assert not check.ok and check.first_bad_seq == 4


def test_the_session_id_is_part_of_every_digest() -> None:
    assert not verify_chain("s2", _rows(_chain())).ok


def test_a_receipt_is_found_only_at_its_own_link() -> None:
    chain = _chain()
    rows = _rows(chain)
    verifier = ChainVerifier("s1", receipts=True)
    for link in links_of_rows(rows):
        verifier.add(link)
    assert verifier.result().ok
    assert verifier.contains(8, chain.head)
    assert verifier.contains(4, rows[2]["hash"])  # the link of rows 2-3 ends at row 3
    assert not verifier.contains(3, rows[2]["hash"])
    assert not verifier.contains(8, rows[2]["hash"])
    assert verifier.contains(0, GENESIS)


def _many() -> tuple[list[int], list[int], list[float], list[float]]:
    """300 values of 60 examples: above ``SMALL_OBSERVATIONS``, so recorded through numpy."""
    rng = np.random.default_rng(3)
    examples = np.repeat(rng.integers(0, 2**40, 60), 5).tolist()
    attributes = rng.integers(0, 10**6, 300).tolist()
    values = [*VALUES, *rng.standard_normal(295).tolist()]
    return examples, attributes, values, [1.0] * 300


@pytest.mark.parametrize("cells", [(EXAMPLES, ATTRIBUTES, VALUES, COSTS), _many()], ids=["few", "many"])
def test_both_paths_write_what_link_digest_and_pack_cells_define(
        cells: tuple[list[int], list[int], list[float], list[float]]) -> None:
    examples, attributes_of, values_of, _ = cells
    chain = Chain("s3", 1, 10, "ab" * 32).record([Observations(*cells)])
    prev = bytes.fromhex("ab" * 32)
    first = 0
    assert len(chain.links) == len({*examples}) and chain.values == len(examples)
    for link, cells in zip(chain.links, chain.cells, strict=True):
        n = link[6]
        assert examples[first : first + n] == [link[3]] * n
        attributes, values = attributes_of[first : first + n], values_of[first : first + n]
        seqs = list(range(10 + first, 10 + first + n))
        digest = link_digest(prev, observe_header("s3", link[1], link[3], n), attributes, values)
        tags = value_tags(seqs, [link[3]] * n, attributes, values)
        assert link[-1] == digest and cells[-1] == pack_cells(attributes, values, tags)
        prev, first = digest, first + n


def _steps(sizes: list[int]) -> list[Event | Observations]:
    """Observe steps of ``sizes`` cells (one example each, but the last of three examples, and two steps of the same
    example in a row), a label event between two of them."""
    rng = np.random.default_rng(5)
    steps: list[Event | Observations] = []
    for i, size in enumerate(sizes):
        examples = [i // 2] * size if i < len(sizes) - 1 else sorted(rng.integers(0, 3, size).tolist())
        steps.append(Observations(examples, rng.integers(0, 784, size).tolist(), rng.standard_normal(size).tolist(),
                                  [0.5] * size))
    return [*steps[:2], Event("label", 0, 1.0, 1.0, {}), *steps[2:]]


@pytest.mark.parametrize("sizes", [[3, 4, 5, 6], [784] * 6, [1, 40, 784, 2, 33]], ids=["small", "rounds", "mixed"])
def test_steps_recorded_together_are_the_chain_of_each_recorded_alone(sizes: list[int]) -> None:
    """A ``steps`` request's rounds are recorded at once: the links, cells and head one record of each would make."""
    events = _steps(sizes)
    together = Chain("s3|a", 1, 4, "cd" * 32).record(events)
    alone = Chain("s3|a", 1, 4, "cd" * 32)
    for event in events:
        alone.record([event])
    assert together == alone and together.values == sum(sizes)
    assert len([link for link in together.links if link[2] == "observe"]) > len(sizes)  # a link per example


def test_a_tag_of_one_row_is_the_vectorised_rule_of_its_row() -> None:
    examples, attributes, values, _ = _many()
    seqs = list(range(2**33, 2**33 + len(values)))
    tags = value_tags(seqs, examples, attributes, values).tolist()
    assert [value_tag(*row) for row in zip(seqs, examples, attributes, values, strict=True)] == tags
    assert any(t < 0 for t in tags) and any(t > 0 for t in tags)  # both halves of the int32 range


def test_an_exported_value_is_read_as_float_reads_it() -> None:
    """An export's row can hold anything: a value written as its number's text hashes as that number, and one that
    is no number is a ValueError (which ``budgetlab audit`` reports), not some other error."""
    rows = _rows(_chain())
    as_text = [*rows[:3], {**rows[3], "value": repr(rows[3]["value"])}, *rows[4:]]
    assert verify_chain("s1", as_text).ok
    with pytest.raises(ValueError, match="could not convert"):
        verify_chain("s1", [*rows[:3], {**rows[3], "value": "abc"}, *rows[4:]])
