"""MkDocs hook: a session's methods in the Python reference, rendered at build time from the table of operations
(``budgetlab.operations``) that gives ``OracleSession``, ``AsyncOracleSession`` and ``LocalSession`` their methods.

The marker ``<!-- session operations -->`` of a page is replaced by one entry per operation: the method with its
arguments and answer, what it does, its HTTP route, and the refusals it may give (their codes). An operation added
to the table appears here at the next build.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- session operations -->"


def signature(op: Any) -> str:
    """``name(arg: type = default, ...) -> Answer``, the annotations as written in the table."""
    parameters = [f"{p.name}: {p.annotation}" + ("" if p.default is p.empty else f" = {p.default!r}")
                  for p in op.signature.parameters.values()]
    return f"{op.name}({', '.join(parameters)}) -> {op.response.__name__}"


def render() -> str:
    from budgetlab.operations import OPERATIONS, Kind

    lines: list[str] = []
    for op in OPERATIONS.values():
        where = ("over HTTP (a session in memory keeps no ledger)" if op.kind is Kind.LEDGER
                 else "in memory, over HTTP and over the session's stream" if op.stream else "in memory and over HTTP")
        codes = ", ".join(f"`{code.value}` ({code.status})" for code in op.all_refusals)
        lines += [f"### `session.{signature(op)}`", "", op.doc.replace("``", "`"), "",
                  f"`{op.method} {op.url}`, {where}. Refuses with {codes}.", ""]
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown
