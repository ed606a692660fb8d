"""``budgetlab bench``'s machinery: the standard grid (``grid``, its measured times in ``times``), its runs resumed
from a results store (``run``, ``store``) and the report of ranks, tables and plots (``report``, ``stats``,
``plots``). The runs execute as a comparison's do (``client.comparison``); the command is ``client.commands.bench``."""
