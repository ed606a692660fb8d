"""The ``budgetlab`` command's commands, one module each (a command group, such as ``session`` or ``runs``, is one
module with its typer sub-app); ``client.cli`` assembles them into the command. A module imports nothing beyond typer
and rich at its start: what a command needs is imported inside it, so that ``budgetlab --help`` stays fast."""
