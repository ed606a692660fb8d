"""The wire contract of budgetlab: every request and answer body of the oracle and of the learner service, one
module a concern, defined once here on the ground floor (``server``, ``learner`` and ``client`` import them):

- ``base``: a parameter's value, the strict request body, examples shared by several concerns;
- ``service``: what both services answer alike (``Health``, ``ErrorBody``);
- ``budgets``: what a session may spend, spent and has left;
- ``datasets``: the datasets the oracle describes;
- ``sessions``: opening a session, and what it is;
- ``calls``: the bodies of a session's calls (next, observe, step, steps, label, predict, evaluate, moments);
- ``ledger``: receipts, ledger rows and pages, the audit;
- ``algorithms``: the learner's algorithms and their parameters;
- ``runs``: runs of the learner, their results and listings;
- ``callers``: the learner's callers;
- ``results``: a comparison's ``results.json``, written and read through one versioned model.
"""
