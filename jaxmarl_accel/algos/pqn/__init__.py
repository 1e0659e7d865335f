"""PQN learners (Gallici et al. 2024): Q(lambda) from the rollouts of parallel envs with a
normalized network and neither replay nor target network; independent agents (``pqn``) or
the VDN sum (``pqn_vdn``). :mod:`~.config` (hyperparameters, epsilon), :mod:`~.networks`
(the shared Q-networks with LayerNorm or BatchNorm), :mod:`~.returns` (Q(lambda) returns),
:mod:`~.learner` (the :class:`~jaxmarl_accel.algos.base.Algo`, learning from the rollout
round's :class:`~jaxmarl_accel.types.Rollout`), :mod:`~.recurrent` (its GRU form,
``agent="rnn"``), :mod:`~.specs` (the records)."""

from jaxmarl_accel.algos.pqn.config import PQNConfig
from jaxmarl_accel.algos.pqn.learner import PQNState, build

__all__ = ["PQNConfig", "PQNState", "build"]
