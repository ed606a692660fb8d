"""Acquisition policies at prediction time (active feature acquisition, issue #38): fitted on a training split read
in full, each chooses which attribute of a test example to pay for next from the values read so far, and predicts
from those alone (``policy.Policy``). One policy a file, each naming its source: ``random_policy.py``, ``static.py``,
``greedy.py``, ``budget_predictor.py`` (Cesa-Bianchi et al.'s test-time budget) and ``q_learning.py`` (trained by
reinforcement learning on the environment); the Gaussian models they share (``gaussian.py``); the adapter that drives
any of them on a ``budgetlab.sensing.SensingEnv`` (``adapter.py``); the honest read of a training split
(``training.py``); and the evaluation's loop (``evaluation.py``)."""

from learner.sensing.budget_predictor import BudgetPredictorPolicy
from learner.sensing.greedy import GreedyPolicy
from learner.sensing.policy import ModelPolicy, Policy, Task
from learner.sensing.q_learning import QLearningPolicy
from learner.sensing.random_policy import RandomPolicy
from learner.sensing.static import StaticPolicy

__all__ = ["BudgetPredictorPolicy", "GreedyPolicy", "ModelPolicy", "Policy", "QLearningPolicy", "RandomPolicy",
           "StaticPolicy", "Task"]
