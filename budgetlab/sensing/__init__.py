"""Active feature acquisition at prediction time: a Gymnasium environment over an oracle session.

``SensingEnv`` (``budgetlab.sensing.env``) needs the ``gym`` extra: ``pip install 'budgetlab[gym]'``. Importing this
package registers its ids in gymnasium's registry (``budgetlab.sensing.registration``): ``budgetlab/<dataset>-v0`` for
each built-in dataset and ``budgetlab/sensing-v0`` for any, so ``gymnasium.make("budgetlab.sensing:budgetlab/cube-v0")``
imports it and makes one.
"""

try:
    import gymnasium  # noqa: F401
except ModuleNotFoundError as exc:  # the extra is not installed: say which one
    raise ModuleNotFoundError("budgetlab.sensing needs gymnasium: pip install 'budgetlab[gym]'",
                              name=exc.name) from None

from budgetlab.sensing.env import SensingEnv
from budgetlab.sensing.registration import ANY_DATASET, env_id, make_vector, register_envs, registered_ids

register_envs()

__all__ = ["ANY_DATASET", "SensingEnv", "env_id", "make_vector", "register_envs", "registered_ids"]
