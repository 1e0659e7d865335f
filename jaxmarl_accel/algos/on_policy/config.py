"""Hyperparameters of the on-policy learners (A2C, PPO, MAPPO), one network per team.

Defaults follow paper 003's trainer (WarpDrive's Tag run configs: Adam, learning rate 1e-3,
gamma 0.98, value-loss coefficient 1, entropy coefficient 0.05, gradient norm clipped at 0.5,
no normalization of returns or advantages for A2C) and, for what only PPO has, Schulman et
al. 2017 (clip 0.2, Table 3's Mujoco setting; GAE lambda 0.95, 4 epochs of 4 minibatches as
in MAPPO, Yu et al. 2022). The recurrent agent (``agent="rnn"``) follows MAPPO's recurrent
policies (Yu et al. 2022, App. C: a GRU after the first layer, trained on whole chunks of
each env's sequence).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from jaxmarl_accel.checks import check_choice, check_counts, check_widths

PPO_ONLY = ("clip_eps", "gae_lambda", "epochs", "minibatches")
"""Fields only PPO and MAPPO read; set on A2C they are a one-line error (:func:`check_for`)."""
AGENTS = ("mlp", "rnn")
"""The ``agent`` values: feed-forward networks, or a GRU after the first layer."""
PPO_LIKE = ("ppo", "mappo")
"""The learners with PPO's clipped loss, GAE and minibatch epochs."""


@dataclasses.dataclass(frozen=True)
class OnPolicyConfig:
    """On-policy learner hyperparameters (frozen; shared by A2C, PPO and MAPPO).

    Attributes:
      agent: ``"mlp"``: feed-forward networks; ``"rnn"``: a GRU of width
        ``hidden_sizes[0]`` after the first layer, its state carried from step to step and
        reset where an episode ends, trained by backpropagation through each rollout
        (minibatches of whole env sequences: ``minibatches`` must divide ``num_envs``).
      hidden_sizes: widths of the hidden ReLU layers of each team's policy-value network
        (one torso, a policy head and a value head, as WarpDrive's fully connected model;
        MAPPO: of its actor and of its critic, separate networks).
      lr: Adam learning rate of every team's network not named in ``team_lr``.
      team_lr: per-team Adam learning rates as ``(team, lr)`` pairs, e.g.
        ``(("runner", 0.005), ("tagger", 0.001))`` (WarpDrive's continuous Tag config);
        teams not named learn at ``lr``. On the command line: ``tagger=0.001,runner=0.005``.
      gamma: discount factor.
      grad_clip: maximum global gradient norm of each team's network per update, or
        ``None`` for no clipping.
      rollout_length: env steps T of one rollout in each of the ``num_envs`` envs; one
        round collects ``T x num_envs`` joint steps, then learns from them (WarpDrive's
        ``train_batch_size / num_envs``: 100 in its gridworld Tag config).
      value_coef: weight of the squared value error in the loss.
      entropy_coef: weight of the policy entropy bonus in the loss.
      normalize_value: learn each team's values in units of a running mean and standard
        deviation of its value targets (MAPPO's ValueNorm, Yu et al. 2022, Sec. 4.1 and
        App. C): the value head predicts ``(G - mu) / sigma``, and the advantages use the
        values mapped back. It keeps the value loss O(1) when returns are large (MPE tag at
        1,000 agents). Off by default, as WarpDrive's ``normalize_return``.
      normalize_advantage: standardize the advantages of each team (per minibatch) before
        the policy loss; ``None``: off for A2C (WarpDrive's configs), on for PPO.
      clip_eps: PPO only: the clip range epsilon of the probability ratio (Schulman et al.
        2017, eq. 7).
      gae_lambda: PPO only: lambda of the generalized advantage estimate (Schulman et al.
        2016, eq. 16); A2C uses n-step returns (lambda 1).
      epochs: PPO and MAPPO (not A2C), and the PQN family: passes over each rollout.
      minibatches: PPO and MAPPO (not A2C), and the PQN family: minibatches per epoch, each
        of ``T x num_envs / minibatches`` joint steps (every agent of each; with ``--agent
        rnn``, of ``num_envs / minibatches`` whole env sequences).
      factored_actions: on an env whose discrete actions are several independent choices
        (``EnvSpec.action_factors``: continuous Tag's acceleration and turn), one
        categorical per choice, as WarpDrive's multi-discrete policy heads; False: one
        categorical over the joint index (e.g. 441 actions on continuous Tag).
      log_std_init: continuous actions: initial log standard deviation of the Gaussian
        policy (a learned vector per team, independent of the observation).
    """

    REPLAY_DEFAULTS: ClassVar[dict[str, Any]] = {
        "buffer_capacity": 1_000_000, "batch_size": 1024, "num_envs": 32,
        "total_env_steps": 1_500_000, "learning_starts": 25_600}
    """The run's defaults for on-policy learners (``TrainConfig`` fields left ``None``): 32
    envs (a rollout of 100 steps is then 3,200 joint steps, PPO's 4 minibatches of 800); the
    replay fields are not used and must keep these values."""

    agent: str = "mlp"
    hidden_sizes: tuple[int, ...] = (64, 64)
    lr: float = 1e-3
    team_lr: tuple[tuple[str, float], ...] = ()
    gamma: float = 0.98
    grad_clip: float | None = 0.5
    rollout_length: int = 100
    value_coef: float = 1.0
    entropy_coef: float = 0.05
    normalize_value: bool = False
    normalize_advantage: bool | None = None
    clip_eps: float = 0.2
    gae_lambda: float = 0.95
    epochs: int = 4
    minibatches: int = 4
    factored_actions: bool = True
    log_std_init: float = -1.0

    def __post_init__(self) -> None:
        check_choice("agent", self.agent, AGENTS)
        check_widths("hidden_sizes", self.hidden_sizes)
        check_counts(self, ("rollout_length", "epochs", "minibatches"))
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        pairs = self.team_lr.items() if isinstance(self.team_lr, dict) else self.team_lr
        try:
            team_lr = tuple(sorted((str(team), float(lr)) for team, lr in pairs))
        except (TypeError, ValueError):
            raise ValueError(f"team_lr must be (team, lr) pairs, got {self.team_lr!r}") from None
        if any(not lr > 0 for _, lr in team_lr) or len(dict(team_lr)) < len(team_lr):
            raise ValueError(f"team_lr must name each team once with a rate > 0, got "
                             f"{', '.join(f'{t}={lr}' for t, lr in team_lr)}")
        object.__setattr__(self, "team_lr", team_lr)  # JSON lists back to sorted pairs
        for name in ("gamma", "gae_lambda"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)!r}")
        if not 0.0 < self.clip_eps < 1.0:
            raise ValueError(f"clip_eps must lie in (0, 1), got {self.clip_eps!r}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be > 0 or None, got {self.grad_clip!r}")
        for name in ("value_coef", "entropy_coef"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")


def check_for(algo: str, config: OnPolicyConfig) -> None:
    """A one-line ValueError naming the field when ``config`` sets a PPO-only field
    (:data:`PPO_ONLY`) away from its default for ``algo`` ``"a2c"``."""
    if algo != "a2c":
        return
    default = OnPolicyConfig()
    for name in PPO_ONLY:
        if getattr(config, name) != getattr(default, name):
            raise ValueError(f"{name} ({getattr(config, name)!r}) applies to algos 'ppo' "
                             "and 'mappo'; "
                             "algo 'a2c' does not use it")


def team_learning_rates(config: OnPolicyConfig, teams: tuple[str, ...]) -> tuple[float, ...]:
    """Each of ``teams``' learning rate (``team_lr``, else ``lr``); a one-line ValueError
    naming the teams when ``team_lr`` names a team the env does not have."""
    given = dict(config.team_lr)
    unknown = sorted(set(given) - set(teams))
    if unknown:
        raise ValueError(f"team_lr names {', '.join(unknown)}, but the env's teams are "
                         f"{', '.join(teams)}")
    return tuple(given.get(team, config.lr) for team in teams)


def normalizes_advantage(algo: str, config: OnPolicyConfig) -> bool:
    """Whether ``algo``'s advantages are standardized (``normalize_advantage`` resolved)."""
    if config.normalize_advantage is None:
        return algo in PPO_LIKE
    return config.normalize_advantage


__all__ = ["AGENTS", "PPO_LIKE", "PPO_ONLY", "OnPolicyConfig", "check_for", "normalizes_advantage",
           "team_learning_rates"]
