"""The bulk path of the hash chain must write exactly what the one-row path and the offline audit compute."""

from __future__ import annotations

from budgetlab.ledger import GENESIS, ROW_FIELDS, Chain, verify_chain

EXAMPLES = [0, 0, 7, 123456789012, 3]
ATTRIBUTES = [0, 41, 2, 999_999, 5]
# Floats whose repr is easy to get wrong: negative zero, subnormals, long mantissas, integral values.
VALUES = [-0.0, 5e-324, 0.1 + 0.2, 1e300, 2.0]
COSTS = [1.0, 0.25, 3.0, 1e-9, 1.0]


def test_observation_rows_equal_rows_appended_one_by_one() -> None:
    bulk = Chain("s1", 4, "ab" * 32)
    rows = bulk.observation_rows(EXAMPLES, ATTRIBUTES, VALUES, COSTS)
    single = Chain("s1", 4, "ab" * 32)
    for e, a, v, c in zip(EXAMPLES, ATTRIBUTES, VALUES, COSTS, strict=True):
        single.append("observe", example=e, attribute=a, value=v, cost=c)
    assert [dict(zip(ROW_FIELDS, row, strict=True)) for row in rows] == single.rows
    assert (bulk.seq, bulk.head) == (single.seq, single.head) == (9, single.rows[-1]["hash"])


def test_observation_rows_verify_after_an_open_row_and_tampering_is_named() -> None:
    chain = Chain("s2", 0, GENESIS)
    chain.append("open", payload={"dataset": "x"})
    rows = chain.rows + [dict(zip(ROW_FIELDS, r, strict=True))
                         for r in chain.observation_rows(EXAMPLES, ATTRIBUTES, VALUES, COSTS)]
    assert verify_chain("s2", rows).ok
    rows[3] = {**rows[3], "value": rows[3]["value"] * 2}
    check = verify_chain("s2", rows)
    assert not check.ok and check.first_bad_seq == 3
