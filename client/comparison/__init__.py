"""What ``budgetlab compare`` is made of: the config and its checks (``config``, ``preflight``, ``presets``), the grid
of runs and where they run (``grid``, ``placement``, ``tune``), the verdicts on the papers' claims (``claims``,
``verdicts``, ``summary``) and the report (``report``, ``plots``, ``tracking``, ``provenance``, ``recorded``);
``compare`` runs them in that order. The command itself is ``client.commands.compare``."""
