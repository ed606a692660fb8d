"""The ledger's hash chain, format 3: one chain link per recorded event or per example of an observe request.

A session's ledger is a sequence of rows numbered ``seq`` = 0, 1, 2, ...: one per event (open, label, predict,
evaluate, prior, close) and one per observed value. Consecutive rows are grouped into chain *links*: an event is
a link of one row; the values one request paid for of one example are one link (a batch observe of 200 examples
makes 200 links). A link is stored once, with a binary sha256 digest, and the rows of an observe link are stored
together, packed (``pack_cells``: 4 + 8 + 4 bytes per value), so the ledger costs about 20 bytes per value
instead of 300, and a write holds the database's lock for one insert per example instead of one per value:

    digest = sha256(previous digest (32 bytes) || header (UTF-8) || "\\n" || attributes (int64 LE) || values (f64 LE))

``header`` is ``name|seq|kind|example|value|cost|payload`` for an event and ``name|seq|observe|example|n`` for a
link of ``n`` values (their costs follow from the attributes and the costs the ``open`` row declares, so they are
not hashed twice). The chain's ``name`` (``chain_name``) is ``session_id|account`` in format 3, the account's id or
"" for an anonymous session, so every link names the account it was charged to; format 2 (before accounts) had the
session id alone, and its chains go on in format 2. Floats appear as ``repr`` in headers and as IEEE bits in the packed
part: an NDJSON export (JSON round-trips floats exactly) re-hashes offline bit for bit.

Each value row also carries a 32-bit ``tag``, a mix of its seq, example, attribute and value bits. The digest
proves that a link is intact; the tags say which of its values was altered. Tags are not a security measure
(anyone can recompute them): the chain and the receipts a client keeps are.
"""

from __future__ import annotations

import hashlib
import json
import struct
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, TypedDict, cast

import numpy as np

from budgetlab.contract.ledger import LedgerKind
from budgetlab.engine import Event, Observations

FORMAT = 3
# The formats whose chains this module hashes and verifies (format 1 is ``budgetlab.ledger_v1``'s).
FORMATS = (2, 3)
GENESIS = "0" * 64
# Storage order of a link's and a value's fields (the store's INSERT statements use them as they are).
LINK_FIELDS = ("session_key", "seq", "kind", "example", "value", "cost", "n", "payload", "digest")
CELLS_FIELDS = ("session_key", "example", "seq", "cells")
# A link as the store writes it, in LINK_FIELDS' order, and as it reads it back, without its session key (``n``: its
# rows; ``payload``: an event's JSON, None for an observe link; ``digest``: 32 bytes). The example is None in a
# database altered by hand only: the verifier names such a link.
StoredLink = tuple[int, int, LedgerKind, int | None, float | None, float, int, str | None, bytes]
ReadLink = tuple[int, LedgerKind, int | None, float | None, float, int, str | None, bytes]
# An observe link's packed rows as the store writes them, in CELLS_FIELDS' order.
StoredCells = tuple[int, int, int, bytes]

M1, M2, M3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_M1, _M2, _M3 = np.uint64(M1), np.uint64(M2), np.uint64(M3)
_U64 = (1 << 64) - 1
# Up to this many values, a link's tags and packed bytes are made with Python ints and ``struct``: numpy's
# per-call cost (a dozen calls for the tags alone) is most of the work of a per-example step's few values.
SMALL_OBSERVATIONS = 32


def chain_name(session_id: str, account: str | None, format: int = FORMAT) -> str:
    """What every header of a session's chain starts with: its id, and in format 3 its account ("" anonymous)."""
    if format not in FORMATS:
        raise ValueError(f"ledger format {format} is not one of {FORMATS}")
    return session_id if format == 2 else f"{session_id}|{account or ''}"


def canonical_json(payload: dict[str, Any] | None) -> str:
    """A payload as it is hashed and stored: sorted keys, no spaces; "" for none."""
    if not payload:
        return ""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)


def event_header(name: str, seq: int, kind: str, example: int | None, value: float | None, cost: float,
                 payload: str) -> bytes:
    return (f"{name}|{seq}|{kind}|{'' if example is None else example}|"
            f"{'' if value is None else repr(float(value))}|{float(cost)!r}|{payload}").encode()


def observe_header(name: str, seq: int, example: int, n: int) -> bytes:
    return f"{name}|{seq}|observe|{example}|{n}".encode()


def link_digest(prev: bytes, header: bytes, attributes: np.ndarray | Sequence[int] | None = None,
                values: np.ndarray | Sequence[float] | None = None) -> bytes:
    h = hashlib.sha256(prev)
    h.update(header)
    if attributes is not None and values is not None:
        h.update(b"\n")
        # int64 and f64, little-endian; struct packs a link's few values several times faster than numpy.
        packing = _HASHED[len(values)]
        try:
            h.update(packing.pack(*attributes, *values))
        except struct.error:  # a value that is no number (a row of an export can hold anything), as float() reads it
            h.update(packing.pack(*attributes, *map(float, values)))
    return h.digest()


class _Formats(dict[int, struct.Struct]):
    """A struct format for each number of values a link has, made the first time a link has that many."""

    def __init__(self, spec: str) -> None:
        super().__init__()
        self.spec = spec

    def __missing__(self, n: int) -> struct.Struct:
        made = self[n] = struct.Struct(self.spec.format(n=n))
        return made


# The layouts of what link_digest hashes of a link's values and of what pack_cells stores.
_HASHED, _PACKED = _Formats("<{n}q{n}d"), _Formats("<{n}i{n}d{n}i")


def value_tag(seq: int, example: int, attribute: int, value: float) -> int:
    """A value row's 32-bit tag (a splitmix64 finaliser over its fields), as a signed int32; ``value_tags`` is the
    same for arrays of rows."""
    return _mixed(seq, example, attribute, struct.unpack("<Q", struct.pack("<d", value))[0])


def _mixed(seq: int, example: int, attribute: int, bits: int) -> int:
    """``value_tag`` of a value whose IEEE bits are ``bits``."""
    h = ((seq * M1) ^ (example * M2) ^ (attribute * M3) ^ bits) & _U64
    h ^= h >> 30
    h = (h * M2) & _U64
    h ^= h >> 27
    h = (h * M3) & _U64
    h ^= h >> 31
    tag = h & 0xFFFFFFFF
    return tag - (1 << 32) if tag >= 1 << 31 else tag


def value_tags(seqs: np.ndarray, examples: np.ndarray, attributes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each value row's ``value_tag``, as signed int32: the rule vectorised, for the batches and the audit."""
    with np.errstate(over="ignore"):
        h = (np.asarray(seqs, dtype=np.int64).astype(np.uint64) * _M1
             ^ np.asarray(examples, dtype=np.int64).astype(np.uint64) * _M2
             ^ np.asarray(attributes, dtype=np.int64).astype(np.uint64) * _M3
             ^ np.ascontiguousarray(values, dtype="<f8").view(np.uint64))
        h ^= h >> np.uint64(30)
        h *= _M2
        h ^= h >> np.uint64(27)
        h *= _M3
        h ^= h >> np.uint64(31)
    tags: np.ndarray = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    return tags


def pack_cells(attributes: np.ndarray, values: np.ndarray, tags: np.ndarray) -> bytes:
    """The stored form of an observe link's rows: attributes (int32 LE), then values (f64 LE), then tags."""
    return (np.ascontiguousarray(attributes, dtype="<i4").tobytes() + np.ascontiguousarray(values, dtype="<f8")
            .tobytes() + np.ascontiguousarray(tags, dtype="<i4").tobytes())


def unpack_cells(blob: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(attributes, values, tags) of a packed observe link, in row order."""
    n = len(blob) // 16
    return (np.frombuffer(blob, dtype="<i4", count=n), np.frombuffer(blob, dtype="<f8", count=n, offset=4 * n),
            np.frombuffer(blob, dtype="<i4", count=n, offset=12 * n))


@dataclass
class Chain:
    """Turns an engine outcome's events into link and value tuples, continuing a session's chain (``name``: its
    ``chain_name``)."""

    name: str
    key: int
    seq: int
    head: str
    links: list[StoredLink] = field(default_factory=list)
    cells: list[StoredCells] = field(default_factory=list)
    values: int = 0

    def record(self, events: Iterable[Event | Observations]) -> Chain:
        prev = bytes.fromhex(self.head)
        # Consecutive observe steps (a ``steps`` request's rounds) are recorded together: their cells are packed
        # and tagged at once, not a round at a time.
        run: list[Observations] = []
        for event in events:
            if isinstance(event, Observations):
                if event.examples:
                    run.append(event)
                continue
            if run:
                prev, run = self._observations(prev, run), []
            payload = canonical_json(event.payload)
            value = None if event.value is None else float(event.value)
            digest = link_digest(prev, event_header(self.name, self.seq, event.kind, event.example, value,
                                                    event.cost, payload))
            self.links.append((self.key, self.seq, event.kind, event.example, value, float(event.cost), 1,
                               payload or None, digest))
            self.seq += 1
            prev = digest
        if run:
            prev = self._observations(prev, run)
        self.head = prev.hex()
        return self

    def _observations(self, prev: bytes, run: list[Observations]) -> bytes:
        """One link per example of each step, in request order (the engine lists an example's cells together)."""
        first = self.seq
        # ``link_digest`` and ``pack_cells`` per link, from byte slices of four buffers packed once: a batch of a
        # thousand examples is a thousand links, and numpy's per-call cost would dominate.
        a64, v64, a32, t32, examples = _packed(run, first)
        key, sid = self.key, self.name
        sha256 = hashlib.sha256
        for lo, hi, example, cost in _links(run, examples):
            seq = first + lo
            h = sha256(prev)
            h.update(observe_header(sid, seq, example, hi - lo))
            h.update(b"\n")
            h.update(a64[8 * lo : 8 * hi])
            h.update(v64[8 * lo : 8 * hi])
            prev = h.digest()
            self.links.append((key, seq, "observe", example, None, cost, hi - lo, None, prev))
            self.cells.append((key, example, seq, a32[4 * lo : 4 * hi] + v64[8 * lo : 8 * hi] + t32[4 * lo : 4 * hi]))
        n = len(a32) // 4
        self.values += n
        self.seq = first + n
        return prev


# Byte buffers (int64 attributes, f64 values, int32 attributes, int32 tags) of a run of observe steps' cells, and
# their examples as an array where numpy made them.
_Packed = tuple[memoryview, memoryview, bytes, bytes, np.ndarray | None]


def _packed(run: list[Observations], first: int) -> _Packed:
    """The cells of consecutive observe steps packed as their links hash and store them, the first numbered
    ``first``: with ``struct`` up to ``SMALL_OBSERVATIONS`` of them, else through arrays, each list converted once."""
    n = sum(len(step.examples) for step in run)
    if n <= SMALL_OBSERVATIONS:
        if len(run) == 1:  # a per-example step's
            examples, attributes, values, _ = run[0]
        else:
            examples, attributes, values = ([*chain.from_iterable(cells)] for cells in zip(*(step[:3] for step in run),
                                                                                              strict=True))
        v64 = struct.pack(f"<{n}d", *values)
        # The values' bits read back from their packed bytes at once (the packs check the lengths).
        bits = struct.unpack(f"<{n}Q", v64)
        return (memoryview(struct.pack(f"<{n}q", *attributes)), memoryview(v64), struct.pack(f"<{n}i", *attributes),
                struct.pack(f"<{n}i", *map(_mixed, range(first, first + n), examples, attributes, bits)), None)
    attributes_in, values_in = array("q"), array("d")
    for step in run:  # array.fromlist: a list converted at C speed, into one buffer for the whole run
        attributes_in.fromlist(step.attributes)
        values_in.fromlist(step.values)
    attributes_of = np.frombuffer(attributes_in, dtype=np.int64).astype("<i8", copy=False)
    values_of = np.frombuffer(values_in, dtype=np.float64).astype("<f8", copy=False)
    examples_of = _examples_of(run)
    tags = value_tags(np.arange(first, first + n, dtype=np.int64), examples_of, attributes_of, values_of)
    return (attributes_of.data.cast("B"), values_of.data.cast("B"),
            attributes_of.astype("<i4").tobytes(), tags.astype("<i4", copy=False).tobytes(), examples_of)


def _one_example(examples: list[int]) -> bool:
    """Whether a step's cells are all of one example (a step's, a round's), checked at C speed."""
    return examples.count(examples[0]) == len(examples)


def _examples_of(run: list[Observations]) -> np.ndarray:
    """The examples of observe steps' cells, as int64: a step of one example repeated, not converted cell by cell."""
    if all(_one_example(step.examples) for step in run):
        return np.repeat(np.array([step.examples[0] for step in run], dtype=np.int64),
                         [len(step.examples) for step in run])
    return np.asarray([*chain.from_iterable(step.examples for step in run)], dtype=np.int64)


def _links(run: list[Observations], examples: np.ndarray | None) -> Iterator[tuple[int, int, int, float]]:
    """The links of consecutive observe steps' cells (one per step and example), as the cells from and to, their
    example and what they cost; ``examples``: the cells' examples as an array, None to compare the lists."""
    at = 0
    for step in run:
        ex, costs, m = step.examples, step.costs, len(step.examples)
        if _one_example(ex):
            starts = [0, m]
        elif examples is None:
            starts = [0, *(i for i in range(1, m) if ex[i] != ex[i - 1]), m]
        else:
            part = examples[at : at + m]
            starts = [0, *(np.flatnonzero(part[1:] != part[:-1]) + 1).tolist(), m]
        for lo, hi in zip(starts[:-1], starts[1:], strict=True):
            yield at + lo, at + hi, ex[lo], float(sum(costs[lo:hi]))
        at += m


def declared_costs(costs: Sequence[float] | None, attributes: Sequence[int]) -> list[float]:
    """What values of these attributes cost, as the session's ``open`` row declares (None: every attribute 1).

    An attribute the costs do not cover (a ledger altered in the database: the engine charges none such) is given
    0.0, as nothing was declared for it; its audit names it outside the session's attributes."""
    if costs is None:
        return [1.0] * len(attributes)
    if attributes and (min(attributes) < 0 or max(attributes) >= len(costs)):
        return [float(costs[a]) if 0 <= a < len(costs) else 0.0 for a in attributes]
    return [float(costs[a]) for a in attributes]


@dataclass(slots=True)
class ChainLink:
    """One link of a chain as the verifier and the audit read it: a stored one (``links_of_stored``) or rows
    grouped (``links_of_rows``).

    ``rows`` is how many rows it holds. Its values (an observe link's rows; in rows, also the observe rows without
    a hash that follow an event, which join its link as the chain reads them) have an attribute, a value and a tag
    each, and the example and cost their rows state.
    """

    seq: int
    kind: str
    example: Any
    value: Any
    cost: Any
    n: int
    payload: dict[str, Any] | str
    digest: Any  # the recorded digest (32 bytes; in rows, what their hash field holds if it is not that in hex)
    rows: int = 1
    attributes: Sequence[int] = ()
    values: Sequence[Any] = ()
    tags: Sequence[Any] = ()
    examples: Sequence[int] | None = None  # None: every value is of the link's example
    costs: Sequence[Any] = ()
    # Rows only: the first row that names another example than its link's (its seq and the reason), and the rows.
    fault: tuple[int, str] | None = None
    source: Sequence[Mapping[str, Any]] = ()


class ChainRow(TypedDict):
    """A row of the ledger as the API pages and the NDJSON export show it, but its session's id (``rows_of_links``):
    an observe row holds one value (its link's first row the link's hash and ``n``), an event row its value, cost and
    payload."""

    seq: int
    kind: LedgerKind
    example: int | None
    attribute: int | None
    value: float | None
    cost: float
    payload: dict[str, Any]
    link: int
    n: int | None
    hash: str | None
    tag: int | None


# The fields of a row, in the order the API and the NDJSON export show them.
ROW_FIELDS = tuple(ChainRow.__annotations__)


def links_of_stored(links: Iterable[ReadLink], cells_of: Mapping[int, bytes], costs: Sequence[float] | None,
                    ) -> Iterator[ChainLink]:
    """Stored links, in seq order, with their values.

    ``links`` are ``(seq, kind, example, value, cost, n, payload, digest)``; ``cells_of[seq]`` an observe
    link's packed rows (``pack_cells``); ``costs`` the attribute costs the ``open`` row declares (None: every
    attribute costs 1). An observe link whose rows are gone is left out: the verifier names the first of them
    missing.
    """
    for seq, kind, example, value, cost, n, payload, digest in links:
        if kind != "observe":
            yield ChainLink(seq, kind, example, value, cost, n, json.loads(payload) if payload else {}, digest)
            continue
        blob = cells_of.get(seq)
        if not blob or len(blob) < 16:  # the link's rows are gone
            continue
        m = len(blob) // 16
        cells = _PACKED[m].unpack_from(blob)
        attributes = cells[:m]
        yield ChainLink(seq, kind, example, None, cost, n, {}, digest, m, attributes, cells[m : 2 * m],
                        cells[2 * m :], None, declared_costs(costs, attributes))


def rows_of_links(links: Iterable[ReadLink], cells_of: Mapping[int, bytes], costs: Sequence[float] | None,
                  ) -> Iterator[ChainRow]:
    """The rows of stored links (as ``links_of_stored`` takes them), in seq order, as the API and the export show
    them."""
    for link in links_of_stored(links, cells_of, costs):
        seq, digest = link.seq, bytes(link.digest).hex()
        if link.kind != "observe":
            # A stored event's kind and payload are those its link was written with (a row's may be anything).
            kind, payload = cast(LedgerKind, link.kind), cast(dict[str, Any], link.payload)
            yield {"seq": seq, "kind": kind, "example": link.example, "attribute": None, "value": link.value,
                   "cost": link.cost, "payload": payload, "link": seq, "n": 1, "hash": digest, "tag": None}
            continue
        example, n = link.example, link.n
        for i, (attribute, row_value, tag, cost) in enumerate(zip(link.attributes, link.values, link.tags,
                                                                   link.costs, strict=True)):
            yield {"seq": seq + i, "kind": "observe", "example": example, "attribute": attribute, "value": row_value,
                   "cost": cost, "payload": {}, "link": seq, "n": n if i == 0 else None,
                   "hash": digest if i == 0 else None, "tag": tag}


def links_of_rows(rows: Iterable[Mapping[str, Any]]) -> Iterator[ChainLink]:
    """Rows in seq order (as ``rows_of_links`` yields them, or as an NDJSON export holds them) grouped into the
    links the chain reads: a row with a hash starts a link, an observe row without one joins the link before it
    if its seq follows, and any other row starts a link of its own, which the verifier finds out of place or
    inserted."""
    group: list[Mapping[str, Any]] = []
    for row in rows:
        if group and row.get("hash") is None and row["kind"] == "observe" and _next(group[-1]["seq"], row["seq"]):
            group.append(row)
            continue
        if group:
            yield _link_of_rows(group)
        group = [row]
    if group:
        yield _link_of_rows(group)


def _digest(hash: Any) -> Any:
    """A row's hash as the digest it stands for: bytes if it is one in lowercase hex, else as it is (no digest)."""
    if isinstance(hash, str):
        try:
            digest = bytes.fromhex(hash)
        except ValueError:
            return hash
        return digest if digest.hex() == hash else hash
    return hash


def _next(previous: Any, seq: Any) -> bool:
    return isinstance(previous, int) and seq == previous + 1


def _link_of_rows(group: list[Mapping[str, Any]]) -> ChainLink:
    first = group[0]
    kind = first["kind"]
    example = first.get("example")
    values = group if kind == "observe" else group[1:]
    # An example cleared in the database comes out as None: the verifier names its link.
    examples: list[Any] | None = [None if row["example"] is None else int(row["example"]) for row in values]
    fault = None
    if kind == "observe":
        stray = next((row for row in group[1:] if row.get("example") != example), None)
        if stray is None:
            example, examples = examples[0] if examples else example, None
        else:
            fault = (stray["seq"], f"row {stray['seq']} was altered: it does not belong to the link of example "
                                   f"{example}")
    return ChainLink(first["seq"], kind, example, first.get("value"), first.get("cost", 0.0),
                     int(first.get("n") or (0 if kind == "observe" else 1)), first.get("payload", ""),
                     _digest(first.get("hash")), len(group), [int(row["attribute"]) for row in values],
                     [row.get("value") for row in values], [row.get("tag") for row in values], examples,
                     [row["cost"] for row in values], fault, group)


@dataclass
class ChainCheck:
    ok: bool
    rows: int
    head: str
    first_bad_seq: int | None = None
    reason: str = ""


class ChainVerifier:
    """Recomputes a chain's digests link by link (``add``, in seq order); ``result`` says whether it held, or
    names the first row that was altered, inserted or is missing. After a fault it reads no further.

    A link is checked once the next one is in place, as its rows were read: a row missing after it is named
    before anything in it. ``receipts``: keep each link's end, for ``contains``.
    """

    def __init__(self, name: str, *, receipts: bool = False) -> None:
        self.name = name
        self.head = bytes(32)
        self.rows = 0
        self.fault: ChainCheck | None = None
        self._last: ChainLink | None = None
        self._ends: dict[int, bytes] | None = {} if receipts else None

    def add(self, link: ChainLink) -> None:
        if self.fault is not None:
            return
        expected = self.rows
        self.rows += 1
        if link.seq != expected:
            what = "missing" if link.seq > expected else "inserted or repeated"
            self._bad(expected, f"row {expected} is {what}: found seq {link.seq} in its place")
        elif self._check_last(False):
            if link.digest is None:
                self._bad(expected, f"row {expected} was inserted: it starts no link and joins none")
            else:
                self.rows += link.rows - 1
                self._last = link

    def result(self) -> ChainCheck:
        if self.fault is None and self._check_last(True):
            return ChainCheck(True, self.rows, self.head.hex())
        assert self.fault is not None
        return self.fault

    def contains(self, rows: int, head: str) -> bool:
        """Whether the link that ends at row ``rows - 1`` has the digest ``head``: ask once ``result`` found the
        chain intact, so every digest is genuine."""
        assert self._ends is not None, "a verifier made without receipts=True"
        if rows in self._ends:
            return self._ends[rows].hex() == head
        return rows == 0 and head == GENESIS

    def _bad(self, seq: int, reason: str) -> bool:
        self.fault = ChainCheck(False, self.rows, self.head.hex(), seq, reason)
        return False

    def _check_last(self, at_end: bool) -> bool:
        link, self._last = self._last, None
        if link is None:
            return True
        if link.kind == "observe":
            n, got = link.n, link.rows
            if got != n:
                seq = link.seq + got
                end = "; rows are missing at the end" if at_end and got < n else ""
                return self._bad(seq, f"row {seq} is missing: link {link.seq} records {n} values{end}")
            if link.fault is not None:
                return self._bad(*link.fault)
            digest = link_digest(self.head, observe_header(self.name, link.seq, link.example, n), link.attributes,
                                 link.values)
            if digest != link.digest:
                return self._bad(*self._altered(link))
        else:
            payload = link.payload or ""
            if not isinstance(payload, str):
                payload = canonical_json(payload)
            digest = link_digest(self.head, event_header(self.name, link.seq, link.kind, link.example, link.value,
                                                         link.cost, payload))
            if digest != link.digest:
                return self._bad(link.seq,
                                 f"row {link.seq} was altered: its content does not hash to its recorded hash")
        if self._ends is not None:
            self._ends.setdefault(link.seq + link.n, digest)
        self.head = digest
        return True

    @staticmethod
    def _altered(link: ChainLink) -> tuple[int, str]:
        """Which row of an observe link that does not hash to its digest was altered: the first whose tag differs."""
        n = link.rows
        if not isinstance(link.example, int):  # cleared in the database: no tag can tell which row
            return link.seq, f"row {link.seq} was altered: its link does not hash to its recorded hash"
        values = np.array([float(v) for v in link.values], dtype=np.float64)
        tags = value_tags(np.arange(link.seq, link.seq + n), np.full(n, int(link.example)),
                          np.asarray(link.attributes, dtype=np.int64), values)
        for i, (kept, tag) in enumerate(zip(link.tags, tags.tolist(), strict=True)):
            if kept != tag:
                return link.seq + i, (f"row {link.seq + i} was altered: its value does not match its tag or its "
                                      "link's hash")
        return link.seq, f"row {link.seq} was altered: its link does not hash to its recorded hash"


def verify_chain(name: str, rows: Iterable[Mapping[str, Any]]) -> ChainCheck:
    """Recompute every link's digest; name the first row that was altered, inserted or is missing.

    ``name`` is the chain's (``chain_name``); ``rows`` are in seq order, as ``rows_of_links`` yields them (or as an
    NDJSON export holds them).
    """
    verifier = ChainVerifier(name)
    for link in links_of_rows(rows):
        verifier.add(link)
        if verifier.fault is not None:
            break
    return verifier.result()
