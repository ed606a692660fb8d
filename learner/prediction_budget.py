"""Prediction on a budget (Cesa-Bianchi et al. §4, Murata & Suzuki): score a predictor through a test session
that may observe only K attributes of each test example — its K largest weights in absolute value."""

from __future__ import annotations

import numpy as np

from budgetlab.contract.runs import TestScore
from budgetlab.errors import StreamExhausted
from learner.oracle import Oracle


def top_k_attributes(weights: np.ndarray, k: int) -> list[int]:
    w = np.abs(np.asarray(weights, dtype=np.float64))
    k = min(k, w.size)
    top = np.argpartition(-w, k - 1)[:k] if k < w.size else np.arange(w.size)
    return sorted(int(i) for i in top if w[i] > 0) or [int(np.argmax(w))]


def score_with_test_budget(oracle: Oracle, weights: np.ndarray, bias: float, k: int) -> TestScore:
    """Predict every example of a test session (online protocol, per_example = k) from k attributes."""
    w = np.asarray(weights, dtype=np.float64)
    attributes = top_k_attributes(w, k)
    squared = zero = wrong = 0.0
    n = 0
    while n < oracle.n_examples:
        # The online protocol's floor: two requests per example, the step (next + observe) and the prediction.
        try:
            example, _, values = oracle.step(attributes)
        except StreamExhausted:
            break
        prediction = float(np.dot(w[attributes], values)) + bias
        y = oracle.predict(example, prediction)
        squared += (prediction - y) ** 2
        zero += y**2
        wrong += (prediction >= 0) != (y >= 0)
        n += 1
    mse = squared / max(n, 1)
    return TestScore(per_example=k, mse=mse, normalized_mse=squared / zero if zero > 0 else mse,
                     zero_one=wrong / max(n, 1), session=oracle.session_id or "local")
