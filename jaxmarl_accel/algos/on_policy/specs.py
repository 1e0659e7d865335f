"""The on-policy family's learners, registered: A2C (paper 003's trainer), PPO (Schulman
et al. 2017) and MAPPO (Yu et al. 2022), one network (MAPPO: actor and critic) per team
learning from the rollout it just collected, feed-forward or recurrent (``agent``), one
:class:`~jaxmarl_accel.algos.registry.AlgoSpec` each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.on_policy import learner
from jaxmarl_accel.algos.on_policy.config import (
    AGENTS,
    PPO_LIKE,
    PPO_ONLY,
    OnPolicyConfig,
    check_for,
    team_learning_rates,
)
from jaxmarl_accel.algos.on_policy.skeleton import check_world
from jaxmarl_accel.algos.registry import AlgoSpec, BuildContext, Family, register_algo
from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.base import EnvSpec

FAMILY = Family(
    name="on_policy", title="on-policy", config_type=OnPolicyConfig,
    replay=lambda config: "rollout", replay_defaults=OnPolicyConfig.REPLAY_DEFAULTS,
    help="jaxmarl_accel.algos.on_policy.OnPolicyConfig; --agent, --hidden-sizes, --gamma, "
         "--grad-clip and --lr above apply to them too",
    choices={"agent": AGENTS},
    sweepable=("lr", "gamma", "grad_clip", "value_coef", "entropy_coef", "log_std_init",
               "clip_eps", "gae_lambda"))


def _builder(name: str, assemble: Callable[..., Any] = learner.build):
    """The ``build`` of learner ``name``, or with ``assemble=learner.phases`` its record's
    ``phases`` hook."""

    def build(spec: EnvSpec, config: OnPolicyConfig, context: BuildContext) -> Any:
        if context.observe_at is not None:
            raise ValueError(f"observe_at: algo {name!r} learns from observations; only the "
                             "neighbourhood critics observe physical states themselves")
        check_for(name, config)
        return assemble(name, spec, config)

    return build


def check_world_of(run: Any) -> None:
    """A one-line ValueError when MAPPO's global state of ``run``'s env cannot be formed:
    an env with ``state_of`` whose step does not report ``info["final_state"]`` (the state
    a step reached, before any auto-reset), or a critic input too large
    (:func:`~.skeleton.check_world`)."""
    env, params = make(run.env, **dict(run.env_kwargs))
    check_world(env.spec)
    if env.state_of is None:
        return
    key = jax.random.key(0)
    state = jax.eval_shape(lambda: env.reset(key, params)[1])
    action = (jnp.zeros((env.spec.num_agents, env.spec.act_dim)) if env.spec.continuous
              else jnp.zeros((env.spec.num_agents,), jnp.int32))
    info = jax.eval_shape(lambda s: env.step(key, s, action, params)[5], state)
    if "final_state" not in info:
        raise ValueError(f"algo 'mappo': the global state of {run.env} cannot be formed: it "
                         "has state_of but its step reports no info['final_state']")


def _checker(name: str):
    def check(run: Any) -> None:
        check_for(name, run.learner)
        if run.learner.team_lr:  # it must name the env's teams
            env = make(run.env, **dict(run.env_kwargs))[0]
            team_learning_rates(run.learner, tuple(dict.fromkeys(env.spec.teams)))
        if name == "mappo":
            check_world_of(run)
        if name not in PPO_LIKE:
            return
        if run.learner.agent == "rnn" and run.num_envs % run.learner.minibatches:
            raise ValueError(f"minibatches ({run.learner.minibatches}) must divide num_envs "
                             f"({run.num_envs}): with agent 'rnn' a minibatch is whole env "
                             "sequences")
        joint_steps = run.num_envs * run.learner.rollout_length
        if joint_steps % run.learner.minibatches:
            raise ValueError(f"minibatches ({run.learner.minibatches}) must divide "
                             f"the rollout's {joint_steps} joint steps (rollout_length "
                             f"{run.learner.rollout_length} x num_envs {run.num_envs})")

    return check


A2C = register_algo(AlgoSpec(
    name="a2c", family=FAMILY, build=_builder("a2c"), check=_checker("a2c"),
    phases=_builder("a2c", learner.phases),
    sweepable=tuple(name for name in FAMILY.sweepable if name not in PPO_ONLY),
    summary="A2C with one policy-value network per team (WarpDrive's trainer)"))
PPO = register_algo(AlgoSpec(
    name="ppo", family=FAMILY, build=_builder("ppo"), check=_checker("ppo"),
    phases=_builder("ppo", learner.phases),
    summary="PPO (clipping, GAE, minibatch epochs), one network per team",
    updates_per_round=lambda config: config.epochs * config.minibatches))
MAPPO = register_algo(AlgoSpec(
    name="mappo", family=FAMILY, build=_builder("mappo"), check=_checker("mappo"),
    phases=_builder("mappo", learner.phases),
    summary="MAPPO: PPO with a critic of the global state, actor and critic per team",
    updates_per_round=lambda config: config.epochs * config.minibatches))

__all__ = ["A2C", "FAMILY", "MAPPO", "PPO", "check_world_of"]
