"""Active feature acquisition at prediction time: a Gymnasium environment over an oracle session.

``SensingEnv`` (see ``budgetlab.sensing.env``) needs the ``gym`` extra: ``pip install 'budgetlab[gym]'``.
"""

from budgetlab.sensing.env import SensingEnv

__all__ = ["SensingEnv"]
