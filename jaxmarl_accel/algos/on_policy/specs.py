"""The on-policy family's learners, registered: A2C (paper 003's trainer) and PPO (Schulman
et al. 2017), one network per team learning from the rollout it just collected, one
:class:`~jaxmarl_accel.algos.registry.AlgoSpec` each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxmarl_accel.algos.on_policy import learner
from jaxmarl_accel.algos.on_policy.config import (
    PPO_ONLY,
    OnPolicyConfig,
    check_for,
    team_learning_rates,
)
from jaxmarl_accel.algos.registry import AlgoSpec, BuildContext, Family, register_algo
from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.base import EnvSpec

FAMILY = Family(
    name="on_policy", title="on-policy", config_type=OnPolicyConfig,
    replay=lambda config: "rollout", replay_defaults=OnPolicyConfig.REPLAY_DEFAULTS,
    help="jaxmarl_accel.algos.on_policy.OnPolicyConfig; --hidden-sizes, --gamma, "
         "--grad-clip and --lr above apply to them too",
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


def _checker(name: str):
    def check(run: Any) -> None:
        check_for(name, run.learner)
        if run.learner.team_lr:  # it must name the env's teams
            env = make(run.env, **dict(run.env_kwargs))[0]
            team_learning_rates(run.learner, tuple(dict.fromkeys(env.spec.teams)))
        joint_steps = run.num_envs * run.learner.rollout_length
        if name == "ppo" and joint_steps % run.learner.minibatches:
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

__all__ = ["A2C", "FAMILY", "PPO"]
