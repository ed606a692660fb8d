"""The ground floor of budgetlab: the wire contract, errors, budget rules, datasets, the ledger chain, the
session engine and the SDK clients. Nothing here imports ``server``, ``learner`` or ``client``."""
