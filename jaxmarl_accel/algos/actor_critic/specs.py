"""The actor-critic family's learners, registered: MADDPG (Lowe et al. 2017), MATD3
(Ackermann et al. 2019) and MASAC, one :class:`~jaxmarl_accel.algos.registry.AlgoSpec` each
(papers 000-002). A variant is a function ``(spec, config) -> Variant`` plugged into the shared
skeleton (:mod:`~.learner`), or into the neighbourhood critics (:mod:`~.local_critic`) for
``critic != "joint"``; adding one is a module with its ``variant`` and one record below."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxmarl_accel.algos.actor_critic import learner as joint
from jaxmarl_accel.algos.actor_critic import local_critic, maddpg, masac, matd3
from jaxmarl_accel.algos.actor_critic.config import (
    ACTOR_STEP_CHOICES,
    CONTINUOUS_POLICIES,
    CRITICS,
    LEARNERS,
    SHARED_BATCHES,
    SHARING,
    ActorCriticConfig,
)
from jaxmarl_accel.algos.actor_critic.variant import Variant
from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.registry import AlgoSpec, BuildContext, Family, register_algo
from jaxmarl_accel.envs.base import EnvSpec

FAMILY = Family(
    name="actor_critic", title="actor-critic", config_type=ActorCriticConfig,
    replay=lambda config: "transition", replay_defaults=ActorCriticConfig.REPLAY_DEFAULTS,
    help="jaxmarl_accel.algos.ActorCriticConfig",
    choices={"learners": LEARNERS, "continuous_policy": CONTINUOUS_POLICIES,
             "actor_step": ACTOR_STEP_CHOICES, "sharing": SHARING, "critic": CRITICS,
             "shared_batch": SHARED_BATCHES},
    sweepable=("actor_lr", "critic_lr", "gamma", "tau", "grad_clip", "actor_reg",
               "gumbel_temperature", "explore_noise", "target_noise", "target_noise_clip",
               "alpha", "alpha_lr", "log_std_min", "log_std_max"),
    observes_physical=lambda config: config.critic != "joint")


def builder(variant: Callable[[EnvSpec, ActorCriticConfig], Variant]
            ) -> Callable[[EnvSpec, ActorCriticConfig, BuildContext], Algo]:
    """The ``build`` of the learner assembled from ``variant``: the joint critics' skeleton,
    or the neighbourhood critics for ``config.critic != "joint"`` (which alone observe
    physical states themselves, ``context.observe_at``)."""

    def build(spec: EnvSpec, config: ActorCriticConfig, context: BuildContext) -> Algo:
        if config.critic != "joint":
            return local_critic.build(spec, config, variant(spec, config), context.observe_at)
        if context.observe_at is not None:
            raise ValueError("observe_at: critic 'joint' learns from observations; only the "
                             "neighbourhood critics observe physical states themselves")
        return joint.build(spec, config, variant(spec, config))

    return build


def phaser(variant: Callable[[EnvSpec, ActorCriticConfig], Variant]
           ) -> Callable[[EnvSpec, ActorCriticConfig, BuildContext], Any]:
    """The ``phases`` hook of the learner assembled from ``variant``: the joint critics'
    :class:`~jaxmarl_accel.algos.actor_critic.state.Phases` (the neighbourhood critics'
    update is not split into phases)."""

    def phases(spec: EnvSpec, config: ActorCriticConfig, context: BuildContext) -> Any:
        if config.critic != "joint":
            raise ValueError(f"critic {config.critic!r}: only the joint critics' update is "
                             "split into phases")
        return joint.phases(spec, config, variant(spec, config))

    return phases


def check_run(config: Any) -> None:
    """Neighbourhood critics learn from one batch for all agents (``index_sharing`` shared)."""
    if config.learner.critic != "joint" and config.index_sharing != "shared":
        raise ValueError(f"index_sharing {config.index_sharing!r} gives each agent's critic "
                         f"its own batch; critic {config.learner.critic!r} learns from "
                         "one batch for all agents (use shared)")


def _spec(name: str, variant: Callable[[EnvSpec, ActorCriticConfig], Variant],
          summary: str) -> AlgoSpec:
    return AlgoSpec(name=name, family=FAMILY, build=builder(variant), summary=summary,
                    check=check_run, variant=variant, phases=phaser(variant))


MADDPG = register_algo(_spec("maddpg", maddpg.variant, "MADDPG"))
MATD3 = register_algo(_spec("matd3", matd3.variant,
                            "MATD3 (twin critics, target smoothing, policy delay)"))
MASAC = register_algo(_spec("masac", masac.variant,
                            "MASAC (entropy term, temperature step)"))

__all__ = ["FAMILY", "MADDPG", "MASAC", "MATD3", "builder", "check_run", "phaser"]
