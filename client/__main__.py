"""``python -m client``: the ``budgetlab`` command, as the commands that start the services run it
(``client.services.BUDGETLAB``).

A package's ``__main__`` rather than ``-m client.cli``: a process spawned by one started so (the learner's Dask
workers) runs its parent's main module again unless that is a ``__main__``, and ``client.cli`` cost each of them
typer and rich (0.15 CPU-s) for nothing.
"""

from client.command import main

main()
