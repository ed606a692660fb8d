"""How long ``budgetlab bench``'s grids took, as measured: light enough for ``budgetlab --help`` to print without
loading the grids (``client.cli`` imports nothing heavy at its start)."""

FULL_TIME = "not measured yet"
QUICK_TIME = "about half a minute on 2 cores"
