"""What the two services share as web apps, on FastAPI, Starlette and uvicorn: the JSON answer of every refusal
(``errors``), the limits a request meets before any of it is read (``limits``), the dashboards' event streams
(``events``), their routes' dependencies on what the app holds (``state``) and their settings read from the
environment (``environment``).

It stands between the ground floor, ``budgetlab`` (which imports no web framework: ``pip install budgetlab`` is the
SDK, the engine and the datasets), and the services, ``server`` and ``learner``, which both use it and never each
other; it comes with the ``server`` and ``learner`` extras.
"""
