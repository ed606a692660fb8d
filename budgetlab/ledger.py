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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from budgetlab.engine import Event, Observations

FORMAT = 3
# The formats whose chains this module hashes and verifies (format 1 is ``budgetlab.ledger_v1``'s).
FORMATS = (2, 3)
GENESIS = "0" * 64
# Storage order of a link's and a value's fields (the store's INSERT statements use them as they are).
LINK_FIELDS = ("session_key", "seq", "kind", "example", "value", "cost", "n", "payload", "digest")
CELLS_FIELDS = ("session_key", "example", "seq", "cells")
# The fields of a row as the API pages and the NDJSON export show it.
ROW_FIELDS = ("seq", "kind", "example", "attribute", "value", "cost", "payload", "link", "n", "hash", "tag")

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


def _opt(x: float | int | None, text: Callable[[object], str] = str) -> str:
    return "" if x is None else text(x)


def event_header(name: str, seq: int, kind: str, example: int | None, value: float | None, cost: float,
                 payload: str) -> bytes:
    return (f"{name}|{seq}|{kind}|{_opt(example)}|{_opt(None if value is None else float(value), repr)}|"
            f"{float(cost)!r}|{payload}").encode()


def observe_header(name: str, seq: int, example: int, n: int) -> bytes:
    return f"{name}|{seq}|observe|{example}|{n}".encode()


def link_digest(prev: bytes, header: bytes, attributes: np.ndarray | None = None,
                values: np.ndarray | None = None) -> bytes:
    h = hashlib.sha256(prev)
    h.update(header)
    if attributes is not None and values is not None:
        h.update(b"\n")
        h.update(np.ascontiguousarray(attributes, dtype="<i8").tobytes())
        h.update(np.ascontiguousarray(values, dtype="<f8").tobytes())
    return h.digest()


def value_tag(seq: int, example: int, attribute: int, value: float) -> int:
    """A value row's 32-bit tag (a splitmix64 finaliser over its fields), as a signed int32; ``value_tags`` is the
    same for arrays of rows."""
    bits: int = struct.unpack("<Q", struct.pack("<d", value))[0]
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
    links: list[tuple[Any, ...]] = field(default_factory=list)
    cells: list[tuple[int, int, int, bytes]] = field(default_factory=list)
    values: int = 0

    def record(self, events: Iterable[Event | Observations]) -> Chain:
        prev = bytes.fromhex(self.head)
        for event in events:
            if isinstance(event, Observations):
                prev = self._observations(prev, event)
            else:
                payload = canonical_json(event.payload)
                value = None if event.value is None else float(event.value)
                digest = link_digest(prev, event_header(self.name, self.seq, event.kind, event.example, value,
                                                        event.cost, payload))
                self.links.append((self.key, self.seq, event.kind, event.example, value, float(event.cost), 1,
                                   payload or None, digest))
                self.seq += 1
                prev = digest
        self.head = prev.hex()
        return self

    def _observations(self, prev: bytes, event: Observations) -> bytes:
        """One link per example, in request order (the engine lists an example's cells together)."""
        first = self.seq
        n = len(event.examples)
        # ``link_digest`` and ``pack_cells`` per link, from byte slices of four arrays packed once: a batch of a
        # thousand examples is a thousand links, and numpy's per-call cost would dominate.
        if n <= SMALL_OBSERVATIONS:
            a64 = memoryview(struct.pack(f"<{n}q", *event.attributes))
            v64 = struct.pack(f"<{n}d", *event.values)
            a32 = struct.pack(f"<{n}i", *event.attributes)
            t32 = struct.pack(f"<{n}i", *(value_tag(first + i, e, a, v) for i, (e, a, v) in
                                          enumerate(zip(event.examples, event.attributes, event.values, strict=True))))
            ex = event.examples
            starts = [0, *(i for i in range(1, n) if ex[i] != ex[i - 1]), n]
        else:
            examples = np.asarray(event.examples, dtype=np.int64)
            attributes = np.asarray(event.attributes, dtype=np.int64)
            values = np.asarray(event.values, dtype=np.float64)
            tags = value_tags(np.arange(first, first + n, dtype=np.int64), examples, attributes, values)
            starts = [0, *(np.flatnonzero(examples[1:] != examples[:-1]) + 1).tolist(), n]
            a64 = memoryview(np.ascontiguousarray(attributes, dtype="<i8").tobytes())
            v64 = np.ascontiguousarray(values, dtype="<f8").tobytes()
            a32 = np.ascontiguousarray(attributes, dtype="<i4").tobytes()
            t32 = np.ascontiguousarray(tags, dtype="<i4").tobytes()
        key, sid = self.key, self.name
        sha256 = hashlib.sha256
        for lo, hi in zip(starts[:-1], starts[1:], strict=True):
            example = event.examples[lo]
            seq = first + lo
            h = sha256(prev)
            h.update(observe_header(sid, seq, example, hi - lo))
            h.update(b"\n")
            h.update(a64[8 * lo : 8 * hi])
            h.update(v64[8 * lo : 8 * hi])
            prev = h.digest()
            self.links.append((key, seq, "observe", example, None, float(sum(event.costs[lo:hi])), hi - lo, None,
                               prev))
            self.cells.append((key, example, seq, a32[4 * lo : 4 * hi] + v64[8 * lo : 8 * hi] + t32[4 * lo : 4 * hi]))
        self.values += n
        self.seq = first + n
        return prev


def rows_of_links(links: Iterable[Sequence[Any]], cells_of: dict[int, bytes], costs: Sequence[float] | None,
                  ) -> Iterator[dict[str, Any]]:
    """The rows of stored links, in seq order, as the API and the export show them.

    ``links`` are ``(seq, kind, example, value, cost, n, payload, digest)``; ``cells_of[seq]`` an observe
    link's packed rows (``pack_cells``); ``costs`` the attribute costs the ``open`` row declares (None: every
    attribute costs 1).
    """
    for seq, kind, example, value, cost, n, payload, digest in links:
        digest_hex = bytes(digest).hex()
        if kind != "observe":
            yield {"seq": seq, "kind": kind, "example": example, "attribute": None, "value": value, "cost": cost,
                   "payload": json.loads(payload) if payload else {}, "link": seq, "n": 1, "hash": digest_hex,
                   "tag": None}
            continue
        blob = cells_of.get(seq)
        if blob is None:  # the link's rows are gone: the verifier names the first of them missing
            continue
        attributes, values, tags = (a.tolist() for a in unpack_cells(bytes(blob)))
        for i, (attribute, row_value, tag) in enumerate(zip(attributes, values, tags, strict=True)):
            yield {"seq": seq + i, "kind": "observe", "example": example, "attribute": attribute, "value": row_value,
                   "cost": 1.0 if costs is None else float(costs[attribute]), "payload": {}, "link": seq,
                   "n": n if i == 0 else None, "hash": digest_hex if i == 0 else None, "tag": tag}


@dataclass
class ChainCheck:
    ok: bool
    rows: int
    head: str
    first_bad_seq: int | None = None
    reason: str = ""


def _bad(count: int, head: bytes, seq: int, reason: str) -> ChainCheck:
    return ChainCheck(False, count, head.hex(), seq, reason)


def verify_chain(name: str, rows: Iterable[dict[str, Any]]) -> ChainCheck:
    """Recompute every link's digest; name the first row that was altered, inserted or is missing.

    ``name`` is the chain's (``chain_name``); ``rows`` are in seq order, as ``rows_of_links`` yields them (or as an
    NDJSON export holds them).
    """
    head = bytes(32)
    count = 0
    group: list[dict[str, Any]] = []

    def close_link(last: bool = False) -> ChainCheck | None:
        nonlocal head
        if not group:
            return None
        first = group[0]
        kind = first["kind"]
        if kind == "observe":
            n = int(first.get("n") or 0)
            if len(group) != n:
                seq = first["seq"] + len(group)
                at_end = "; rows are missing at the end" if last and len(group) < n else ""
                return _bad(count, head, seq, f"row {seq} is missing: link {first['seq']} records {n} values{at_end}")
            for row in group[1:]:
                if row.get("example") != first.get("example") or row["kind"] != "observe":
                    return _bad(count, head, row["seq"], f"row {row['seq']} was altered: it does not belong to the "
                                f"link of example {first.get('example')}")
            attributes = np.array([int(r["attribute"]) for r in group], dtype=np.int64)
            values = np.array([float(r["value"]) for r in group], dtype=np.float64)
            digest = link_digest(head, observe_header(name, first["seq"], int(first["example"]), n),
                                 attributes, values)
            if digest.hex() != first.get("hash"):
                seqs = np.array([r["seq"] for r in group], dtype=np.int64)
                tags = value_tags(seqs, np.full(len(group), int(first["example"])), attributes, values)
                for row, tag in zip(group, tags.tolist(), strict=True):
                    if row.get("tag") != tag:
                        return _bad(count, head, row["seq"], f"row {row['seq']} was altered: its value does not "
                                    "match its tag or its link's hash")
                return _bad(count, head, first["seq"],
                            f"row {first['seq']} was altered: its link does not hash to its recorded hash")
        else:
            payload = first["payload"] if isinstance(first["payload"], str) else canonical_json(first["payload"])
            digest = link_digest(head, event_header(name, first["seq"], kind, first.get("example"),
                                                    first.get("value"), first.get("cost", 0.0), payload))
            if digest.hex() != first.get("hash"):
                return _bad(count, head, first["seq"],
                            f"row {first['seq']} was altered: its content does not hash to its recorded hash")
        head = digest
        group.clear()
        return None

    for expected, row in enumerate(rows):
        count += 1
        if row["seq"] != expected:
            what = "missing" if row["seq"] > expected else "inserted or repeated"
            return _bad(count, head, expected, f"row {expected} is {what}: found seq {row['seq']} in its place")
        starts_link = row.get("hash") is not None
        if starts_link or row["kind"] != "observe" or not group:
            bad = close_link()
            if bad is not None:
                return bad
            if not starts_link:
                return _bad(count, head, expected, f"row {expected} was inserted: it starts no link and joins none")
        group.append(row)
    bad = close_link(last=True)
    if bad is not None:
        return bad
    return ChainCheck(True, count, head.hex())


def contains_receipt(rows: Iterable[dict[str, Any]], receipt_rows: int, receipt_head: str) -> bool:
    """Whether the link that ends at row ``receipt_rows - 1`` has the digest ``receipt_head``.

    Rows are as ``verify_chain`` takes them; call it after the chain verified, so every digest is genuine.
    """
    for row in rows:
        digest = row.get("hash")
        if digest is None:
            continue
        n = int(row.get("n") or 1)
        if row["seq"] + n == receipt_rows:
            return bool(digest == receipt_head)
    return receipt_rows == 0 and receipt_head == GENESIS
