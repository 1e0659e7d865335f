"""The PQN family's learners, registered: PQN with independent agents and PQN-VDN (Gallici et
al. 2024; VDN: Sunehag et al. 2018), one :class:`~jaxmarl_accel.algos.registry.AlgoSpec`
each, learning from the rollout round's rollouts (no replay)."""

from __future__ import annotations

from typing import Any

from jaxmarl_accel.algos.pqn import learner, recurrent
from jaxmarl_accel.algos.pqn.config import AGENTS, NORMS, PQNConfig, check_divides, epsilon
from jaxmarl_accel.algos.registry import AlgoSpec, BuildContext, Family, register_algo
from jaxmarl_accel.envs.base import EnvSpec

FAMILY = Family(
    name="pqn", title="PQN", config_type=PQNConfig,
    replay=lambda config: "rollout", replay_defaults=PQNConfig.REPLAY_DEFAULTS,
    help="jaxmarl_accel.algos.pqn.PQNConfig; --agent, --hidden-sizes, --lr, --gamma, "
         "--grad-clip, --rollout-length, --epochs, --minibatches, --epsilon-*, "
         "--reward-scale above apply to them too",
    choices={"agent": AGENTS, "norm": NORMS},
    sweepable=("lr", "gamma", "q_lambda", "grad_clip", "epsilon_start", "epsilon_finish",
               "reward_scale"),
    exploration=lambda config, clocks: {"epsilon": epsilon(config, clocks)})


def _builder(name: str):
    def build(spec: EnvSpec, config: PQNConfig, context: BuildContext) -> Any:
        if context.observe_at is not None:
            raise ValueError(f"observe_at: algo {name!r} learns from observations; only the "
                             "neighbourhood critics observe physical states themselves")
        if spec.continuous:
            raise ValueError(f"algo {name!r} needs discrete actions; {spec.name} was made "
                             "with continuous_actions=True")
        return (recurrent if config.agent == "rnn" else learner).build(name, spec, config)

    return build


def _check(run: Any) -> None:
    check_divides(run.learner, run.num_envs)


def _updates_per_round(config: PQNConfig) -> int:
    return config.epochs * config.minibatches


PQN = register_algo(AlgoSpec(
    name="pqn", family=FAMILY, build=_builder("pqn"), check=_check,
    updates_per_round=_updates_per_round,
    summary="PQN: Q(lambda) from parallel rollouts, no replay or target network, "
            "independent agents"))
PQN_VDN = register_algo(AlgoSpec(
    name="pqn_vdn", family=FAMILY, build=_builder("pqn_vdn"), check=_check,
    updates_per_round=_updates_per_round,
    summary="PQN-VDN: PQN on the sum of the agents' Q-values and the team reward"))

__all__ = ["FAMILY", "PQN", "PQN_VDN"]
