"""Hyperparameters of the PQN learners (Gallici et al. 2024): PQN with independent agents and
PQN-VDN.

Defaults are JaxMARL 0.2.0's PQN-VDN settings for MPE (``baselines/QLearning/config/alg/
pqn_vdn_ff_mpe.yaml``, equal to ``pqn_vdn_rnn_mpe.yaml`` but for the agent): 2 hidden layers
of 256 units with LayerNorm, rollouts of 16 steps in 256 envs, 4 epochs of 16 minibatches,
RAdam at 5e-4, gradients clipped at norm 1, gamma 0.9, lambda 0.3, epsilon from 1.0 to 0.1
over a tenth of the run: 200,000 env steps of ``pqn_vdn_rnn_mpe.yaml``'s 2M (the family's
default run length). Its SMAX settings (``pqn_vdn_rnn_smax.yaml``) differ: 512 units,
BatchNorm of the inputs and hidden layers, 128 envs, rollouts of 128 steps, lr 2.5e-4,
gamma 0.99, lambda 0.85, epsilon down to 0.01, rewards scaled by 10.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from jaxmarl_accel.checks import check_choice, check_counts, check_widths

AGENTS = ("mlp", "rnn")
"""The agent networks ``agent`` names (as the on-policy family's)."""
NORMS = ("layer_norm", "batch_norm", "none")
"""The normalization of every hidden layer ``norm`` names."""


@dataclasses.dataclass(frozen=True)
class PQNConfig:
    """PQN hyperparameters (frozen; shared by ``pqn`` and ``pqn_vdn``).

    Attributes:
      agent: the Q-network shared by all agents, input the observation and the agent's
        one-hot id: ``"mlp"``, feed-forward; ``"rnn"``, a GRU after the first layer, its state
        carried from step to step and reset at episode ends, learning from whole env
        sequences (LayerNorm or none; JaxMARL's ``pqn_vdn_rnn``).
      hidden_sizes: widths of its hidden layers (each Dense -> normalization -> ReLU).
      norm: each hidden layer's normalization: ``"layer_norm"`` (Ba et al. 2016; PQN's
        default, Gallici et al. 2024, Sec. 4), ``"batch_norm"`` (Ioffe and Szegedy 2015,
        as JaxMARL's SMAX settings; batch statistics while learning, their running averages
        while acting) or ``"none"``.
      norm_input: BatchNorm of the network's input (JaxMARL's ``NORM_INPUT``).
      lr: RAdam learning rate (Liu et al. 2020; JaxMARL's PQN optimizer).
      gamma: discount factor.
      q_lambda: lambda of the Q(lambda) returns (0: one-step Q-learning targets).
      grad_clip: maximum global norm of each gradient step's gradient.
      rollout_length: env steps T of one rollout in each of the run's ``num_envs`` envs.
      epochs: passes over each rollout.
      minibatches: minibatches per epoch, each of ``T x num_envs / minibatches`` joint steps
        (every agent of each), which they must divide; for ``agent="rnn"`` each of
        ``num_envs / minibatches`` whole env sequences, which they must divide.
      epsilon_start: exploration rate before the first update.
      epsilon_finish: exploration rate after the annealing.
      epsilon_anneal_steps: env steps over which epsilon falls linearly from
        ``epsilon_start`` to ``epsilon_finish``, counted by the learner itself: the env steps
        of the rollouts it has learned from, so a rollout is collected at the rate of its
        round's start.
      reward_scale: factor of the rewards in the returns (the learner's only; returns and
        metrics stay the env's); JaxMARL's SMAX settings use 10.
    """

    REPLAY_DEFAULTS: ClassVar[dict[str, Any]] = {
        "buffer_capacity": 1_000_000, "batch_size": 1024, "num_envs": 256,
        "total_env_steps": 2_000_000, "learning_starts": 0}
    """The run's defaults for PQN learners (``TrainConfig`` fields left ``None``): 256 envs
    and 2M env steps (JaxMARL's ``pqn_vdn_rnn_mpe.yaml``); the replay fields are not used and
    must keep these values."""

    agent: str = "mlp"
    hidden_sizes: tuple[int, ...] = (256, 256)
    norm: str = "layer_norm"
    norm_input: bool = False
    lr: float = 5e-4
    gamma: float = 0.9
    q_lambda: float = 0.3
    grad_clip: float = 1.0
    rollout_length: int = 16
    epochs: int = 4
    minibatches: int = 16
    epsilon_start: float = 1.0
    epsilon_finish: float = 0.1
    epsilon_anneal_steps: int = 200_000
    reward_scale: float = 1.0

    def __post_init__(self) -> None:
        check_choice("agent", self.agent, AGENTS)
        check_choice("norm", self.norm, NORMS)
        if not isinstance(self.norm_input, bool):
            raise ValueError(f"norm_input must be a bool, got {self.norm_input!r}")
        if self.agent == "rnn" and (self.norm == "batch_norm" or self.norm_input):
            raise ValueError("agent 'rnn': the recurrent Q-network normalizes with "
                             "layer_norm or none; batch_norm and norm_input need agent 'mlp'")
        check_widths("hidden_sizes", self.hidden_sizes)
        check_counts(self, ("rollout_length", "epochs", "minibatches", "epsilon_anneal_steps"))
        for name in ("lr", "grad_clip", "reward_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("gamma", "q_lambda", "epsilon_start", "epsilon_finish"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)!r}")
        if self.epsilon_finish > self.epsilon_start:
            raise ValueError(f"epsilon_finish must be <= epsilon_start ({self.epsilon_start}), "
                             f"got {self.epsilon_finish!r}")


def epsilon(config: PQNConfig, env_steps: jax.Array) -> jax.Array:
    """The exploration rate after ``env_steps`` (any shape, int) env steps learned from:
    linear from ``epsilon_start`` to ``epsilon_finish`` over ``epsilon_anneal_steps``, then
    constant; float32 of ``env_steps``' shape."""
    frac = jnp.minimum(jnp.asarray(env_steps).astype(jnp.float32)
                       / config.epsilon_anneal_steps, 1.0)
    return config.epsilon_start + frac * (config.epsilon_finish - config.epsilon_start)


def check_divides(config: PQNConfig, num_envs: int) -> None:
    """A one-line ValueError when ``minibatches`` does not divide the rollout's ``T x
    num_envs`` joint steps (``agent="rnn"``: its ``num_envs`` sequences)."""
    if config.agent == "rnn":
        if num_envs % config.minibatches:
            raise ValueError(f"minibatches ({config.minibatches}) must divide num_envs "
                             f"({num_envs}): agent 'rnn' learns from whole env sequences")
        return
    joint_steps = num_envs * config.rollout_length
    if joint_steps % config.minibatches:
        raise ValueError(f"minibatches ({config.minibatches}) must divide the rollout's "
                         f"{joint_steps} joint steps (rollout_length {config.rollout_length} "
                         f"x num_envs {num_envs})")


__all__ = ["AGENTS", "NORMS", "PQNConfig", "check_divides", "epsilon"]
