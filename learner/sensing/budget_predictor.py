"""``budget``: Cesa-Bianchi, Shalev-Shwartz & Shamir (2011, §4)'s prediction on a test-time budget: a linear predictor
fitted on the training split reads the attributes of its largest weights in absolute value, the same for every
example, and predicts with its weights on them (the rule of ``learner.prediction_budget.top_k_attributes``, which
``budgetlab run --test-budget`` scores). The predictor is ridge regression (its penalty by leave-one-out) on the
centred attributes, so that an unread attribute counts at its training mean, not at 0; for classification one
predictor per class (one-vs-rest on ±1 targets), an attribute ranked by the norm of its weights over the classes and
the class of the largest output predicted. The rule ignores the attributes' costs, as the paper's does."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import RidgeCV

from learner.prediction_budget import top_k_attributes
from learner.sensing.policy import Task, affordable

_ALPHAS = np.logspace(-3, 3, 13)


class BudgetPredictorPolicy:
    """Reads the top weights of a linear predictor in decreasing order, and predicts with it."""

    name = "budget"

    def fit(self, X: np.ndarray, y: np.ndarray, costs: np.ndarray, task: Task) -> None:
        self.costs = np.asarray(costs, dtype=np.float64)
        self.task = task
        self.center = X.mean(axis=0)
        self.classes = np.unique(y) if task == "classification" else np.zeros(0)
        targets = np.where(y[:, None] == self.classes[None, :], 1.0, -1.0) if task == "classification" else y
        ridge = RidgeCV(alphas=_ALPHAS).fit(X - self.center, targets)
        self.weights = np.atleast_2d(ridge.coef_)  # (outputs, d)
        self.bias = np.atleast_1d(ridge.intercept_)
        self.importance = np.linalg.norm(self.weights, axis=0)

    def act(self, values: np.ndarray, mask: np.ndarray, budget_left: float) -> int | None:
        # The rule's top k + 1 attributes hold the k read ones (its top k) and the next one.
        top = top_k_attributes(self.importance, int(np.sum(mask)) + 1)
        allowed = affordable(mask, self.costs, budget_left)
        fresh = [i for i in top if allowed[i] and self.importance[i] > 0]
        return max(fresh, key=lambda i: self.importance[i]) if fresh else None

    def predict(self, values: np.ndarray, mask: np.ndarray) -> float:
        read = np.flatnonzero(mask)
        outputs = self.weights[:, read] @ (np.asarray(values)[read] - self.center[read]) + self.bias
        if self.task == "classification":
            return float(self.classes[int(np.argmax(outputs))])
        return float(outputs[0])
