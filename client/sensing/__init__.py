"""``budgetlab sense``: the AFA evaluation's command (``command.py``), its summary over seeds and comparisons
(``summary.py``), figures (``plots.py``) and report (``report.py``)."""

from client.sensing.command import SenseOptions, run_sense

__all__ = ["SenseOptions", "run_sense"]
