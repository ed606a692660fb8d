"""How long ``budgetlab bench``'s grids took, as measured: light enough for ``budgetlab --help`` to print without
loading the grids (``client.cli`` imports nothing heavy at its start)."""

FULL_TIME = ("25.5 minutes (1,531 s of wall time, 1,029 CPU-s) for its 3,760 runs on 2 cores shared with "
             "another job")
QUICK_TIME = "12 s of wall time and 10 CPU-s for its 81 runs on 2 cores shared with other jobs"
