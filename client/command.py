"""The ``budgetlab`` command's entry point: where the command's own packages are missing (``pip install budgetlab``
alone, without the ``client`` extra) it says which extra to install instead of ending in a traceback."""

from __future__ import annotations

import os
import sys

OURS = {"budgetlab", "web", "server", "learner", "client"}


def main() -> None:
    try:
        from client.cli import app
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if not missing or missing in OURS:
            raise
        sys.exit(f"budgetlab: the command needs the client extra ({missing} is not installed): "
                 "pip install 'budgetlab[client]'")
    # A package.module:Class algorithm names a module of the user's, found from the current directory as `python -m`
    # finds one; appended, so that it never shadows an installed package.
    sys.path.append(os.getcwd())
    # Named as the console script is, also where it runs as `python -m client` (the services compare and sandbox
    # start): click would otherwise name it after sys.argv[0] in its usage lines.
    app(prog_name="budgetlab")
