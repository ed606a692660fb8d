"""The learner service: the plumbing that serves the learning core over HTTP.

What is the service's, here: the app assembled (``app``: its settings, store and run manager, limits and routers),
its routes by resource (``routers/``: algorithms, callers, runs) with their request dependencies (``deps``), the
callers and their tokens (``auth``), the runs it keeps going on the workers (``runs``), closes the sessions of
(``closing``) and records (``store``, ``tables``, ``database`` and the Alembic ``migrations/``), the oracles a run may
use and the one translation of what they answer into the learner's refusals (``oracle_access``), its settings from
the environment (``settings``), and what its dashboard asks of it (``dashboard``, ``reports``: past comparisons).

What is the learning core's, in ``learner/`` (used in-process by ``budgetlab run`` and ``budgetlab compare`` as well
as by this service, and importing nothing from here): the algorithms, a run (``runner``) and its score
(``scoring``, ``prediction_budget``), tuning, regret, diagnosis, the estimator, how a run reaches an oracle
(``oracle``: ``LocalOracle``, ``http_oracle``: ``HttpOracle``) and where runs execute (``cluster``, the Dask pool that
``budgetlab compare`` uses too; ``worker_start``, its workers' start; ``held``, the sessions a run opened).

Importing this package imports nothing: ``learner.service.app:create_app`` is the app (``budgetlab serve learner``'s
factory wraps it with the dashboard's page).
"""
