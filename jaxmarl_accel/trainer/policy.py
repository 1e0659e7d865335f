"""A learner's policy run in an environment: the adapter between the learner's own policy
(:attr:`~jaxmarl_accel.algos.Algo.policy`, over observations) and the env's drivers
(:func:`~jaxmarl_accel.envs.evaluate.evaluate_policy`, :func:`~jaxmarl_accel.envs.rollout.rollout`,
:func:`~jaxmarl_accel.trainer.steps.transition_step`), which hand every policy an
:class:`~jaxmarl_accel.envs.policies.EnvObs`. Both sides have the one policy signature
(:data:`~jaxmarl_accel.types.Policy`); the adapter lives here, above the env and learner
layers, so that neither imports the other.
"""

from __future__ import annotations

import jax

from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.envs.policies import EnvObs, observing, scripted_team
from jaxmarl_accel.types import Policy, PyTree


def learner_policy(env: Env, algo: Algo, scripted_prey: bool, explore: bool) -> Policy:
    """``algo``'s joint policy of one environment, run in ``env``: ``(algo_state, carry, key,
    obs: EnvObs, avail [N, A] bool) -> (env_action, action_vec [N, action_dim], carry)``,
    with ``algo.initial_carry()`` the carry at an episode's start.

    With ``scripted_prey`` the prey's rows (and their action vectors) come from the scenario's
    scripted policy instead of the learners
    (:func:`~jaxmarl_accel.envs.policies.scripted_team`); ``explore`` (static) selects the
    learners' exploration. The key splits into the learners' key and the prey's either way,
    so the learners draw the same actions with and without scripted prey.
    """
    learners = observing(algo.policy(explore))
    if scripted_prey:
        return scripted_team(env, learners, "prey")

    def policy(algo_state: PyTree, carry: PyTree, key: jax.Array, obs: EnvObs,
               avail: jax.Array) -> tuple[jax.Array, jax.Array, PyTree]:
        learners_key, _ = jax.random.split(key)  # the second: the prey's, when scripted
        return learners(algo_state, carry, learners_key, obs, avail)

    return policy


__all__ = ["learner_policy"]
