"""Hyperparameters of the actor-critic learners (MADDPG, MATD3, MASAC).

Defaults are the reference settings of the seed papers (DESIGN.md): 2-layer ReLU MLPs with
64 units, Adam with learning rate 0.01 for actors and critics, gamma 0.95, tau 0.01, and the
details of the original MADDPG code (Lowe et al. 2017): gradient clipping at norm 0.5, actor
regularizer 1e-3 on the squared pre-activation outputs, Gumbel-softmax at temperature 1.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from jaxmarl_accel.algos.actor_critic.agent_map import LEARNERS
from jaxmarl_accel.checks import check_choice

CONTINUOUS_POLICIES = ("auto", "sigmoid", "gaussian", "gumbel_softmax")
ACTOR_STEPS = ("linear", "full")
ACTOR_STEP_CHOICES = ("auto", *ACTOR_STEPS)
SHARING = ("agent", "team")
CRITICS = ("joint", "knearest", "meanfield", "pic")
SHARED_BATCHES = ("joint_steps", "pairs")


@dataclasses.dataclass(frozen=True)
class ActorCriticConfig:
    """Learner hyperparameters (frozen; shared by the three algorithms).

    Attributes:
      hidden_sizes: widths of the hidden ReLU layers of every actor and critic MLP.
      actor_lr: Adam learning rate of the actors.
      critic_lr: Adam learning rate of the critics.
      gamma: discount factor.
      tau: soft target update rate, ``target <- tau * online + (1 - tau) * target``.
      grad_clip: maximum global gradient norm per agent and per network (actor, critic),
        or ``None`` for no clipping. The original MADDPG code clips at 0.5 (per variable).
      actor_reg: weight of the mean squared pre-activation actor output added to the actor
        loss (``p_reg * 1e-3`` in the original MADDPG code).
      learners: ``"parallel"`` (all agents in one ``vmap``) or ``"sequential"`` (agent by
        agent in a ``lax.scan``, the loop of the reference implementations).
      gumbel_temperature: temperature of the Gumbel-softmax relaxation (discrete actions).
      straight_through: if True (default) the relaxed discrete action is replaced by its
        one-hot in the forward pass while gradients flow through the soft sample
        (straight-through Gumbel-softmax, Jang et al. 2017). Our discrete envs execute the
        sampled move and the replay stores its one-hot, so the critics are trained on
        one-hot actions only; straight-through evaluates them on one-hot actions in the
        actor step and the target too. False uses the soft sample there, as the original
        code does; the original code also executes and stores that soft sample, which is
        ``continuous_policy="gumbel_softmax"`` on a continuous-action env.
      explore_noise: standard deviation of the Gaussian exploration noise of deterministic
        continuous actors (MADDPG, MATD3), in action units (actions lie in ``[0, 1]``).
      policy_delay: MATD3 updates actors and targets once every this many updates.
      target_noise: MATD3 target-policy smoothing noise std, in the units of TD3's
        ``[-1, 1]`` actions (halved for our ``[0, 1]`` actions; added to the logits as is
        for discrete actions).
      target_noise_clip: MATD3 clip of that noise, same units as ``target_noise``.
      alpha: MASAC entropy coefficient (initial value when ``auto_alpha``).
      auto_alpha: MASAC tunes ``log(alpha)`` per agent toward ``target_entropy``.
      alpha_lr: Adam learning rate of ``log(alpha)``.
      target_entropy: per-agent entropy target of the tuning, or ``None`` for the default:
        ``0.5 * log(valid actions)`` (discrete) or ``-act_dim`` (continuous).
      log_std_min: lower clip of the MASAC Gaussian log standard deviation (continuous).
      log_std_max: upper clip of that log standard deviation.
      continuous_policy: actor head for continuous-action envs: ``"sigmoid"`` (deterministic
        ``[0, 1]`` actions with Gaussian exploration), ``"gaussian"`` (squashed Gaussian),
        ``"gumbel_softmax"`` (soft Gumbel-softmax samples over the action components, how
        the original MADDPG code drives MPE's move vector), or ``"auto"``: gaussian for
        MASAC, sigmoid otherwise. Ignored for discrete-action envs.
      actor_step: how the actor step evaluates agent i's critics at the replayed joint
        action with its own action replaced: ``"linear"`` shares the critic's
        first-layer product with the replayed input and adds the own action's correction
        (exact because that layer is linear; the gradient flows through the own action's
        kernel rows only); ``"full"`` builds every agent's joint input ``[N, B, N (obs +
        act)]`` and back-propagates through all of it (the reference implementations'
        form); ``"auto"`` (default): linear, the faster form at every N measured side by
        side on the quiet 2-core CPU (3 to 32 agents). Joint critics only.
      sharing: ``"agent"`` (default): every agent has its own actor and critics, stacked on
        an agent axis; ``"team"``: one actor and one set of critics per team, shared by its
        agents and trained on their pooled samples (needs a critic whose input does not
        grow with N: ``critic`` knearest, meanfield or pic).
      critic: what agent i's critic reads: ``"joint"`` (default): every agent's observation
        and action (MADDPG's centralized critic, ``N (obs_dim + A)`` inputs);
        ``"knearest"``: its observation and action and the actions of its ``critic_k``
        nearest agents; ``"meanfield"``: its observation and action and the mean action of
        those neighbours (Yang et al. 2018); ``"pic"``: a graph network over it and those
        neighbours, node features each one's observation and action, invariant to the
        neighbours' order (PIC, Liu et al. 2019). See
        :mod:`~jaxmarl_accel.algos.actor_critic.local_critic`.
      critic_k: neighbours a knearest, meanfield or pic critic sees (at most N - 1).
      shared_batch: what a team-shared learner trains on: ``"joint_steps"`` (default): every
        agent of each of the batch's joint steps (``batch_size x`` team size samples);
        ``"pairs"``: ``batch_size`` (joint step, agent) pairs, one agent of each team drawn
        per joint step.
    """

    REPLAY_DEFAULTS: ClassVar[dict[str, Any]] = {
        "buffer_capacity": 1_000_000, "batch_size": 1024, "num_envs": 10,
        "total_env_steps": 1_500_000, "learning_starts": 1024 * 25}
    """The run's replay and schedule defaults for actor-critic learners (``TrainConfig``
    fields left ``None``): paper 001's MADDPG settings (a replay of 1M transitions, batches of
    1024, updates every 100 env steps after 25 batches' worth)."""

    hidden_sizes: tuple[int, ...] = (64, 64)
    actor_lr: float = 0.01
    critic_lr: float = 0.01
    gamma: float = 0.95
    tau: float = 0.01
    grad_clip: float | None = 0.5
    actor_reg: float = 1e-3
    learners: str = "parallel"
    gumbel_temperature: float = 1.0
    straight_through: bool = True
    explore_noise: float = 0.1
    policy_delay: int = 2
    target_noise: float = 0.2
    target_noise_clip: float = 0.5
    alpha: float = 0.05
    auto_alpha: bool = False
    alpha_lr: float = 3e-4
    target_entropy: float | None = None
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    continuous_policy: str = "auto"
    actor_step: str = "auto"
    sharing: str = "agent"
    critic: str = "joint"
    critic_k: int = 8
    shared_batch: str = "joint_steps"

    def __post_init__(self) -> None:
        if not self.hidden_sizes or any(
            not isinstance(h, int) or h <= 0 for h in self.hidden_sizes
        ):
            raise ValueError(f"hidden_sizes must be positive ints, got {self.hidden_sizes!r}")
        for name in ("actor_lr", "critic_lr", "alpha_lr", "gumbel_temperature"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must lie in [0, 1], got {self.gamma!r}")
        if not 0.0 <= self.tau <= 1.0:
            raise ValueError(f"tau must lie in [0, 1], got {self.tau!r}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be > 0 or None, got {self.grad_clip!r}")
        for name in ("actor_reg", "explore_noise", "target_noise", "target_noise_clip", "alpha"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        check_choice("learners", self.learners, LEARNERS)
        check_choice("continuous_policy", self.continuous_policy, CONTINUOUS_POLICIES)
        check_choice("actor_step", self.actor_step, ACTOR_STEP_CHOICES)
        self._check_sharing()
        if not isinstance(self.policy_delay, int) or self.policy_delay < 1:
            raise ValueError(f"policy_delay must be an int >= 1, got {self.policy_delay!r}")
        if self.auto_alpha and not self.alpha > 0:
            raise ValueError(f"alpha must be > 0 when auto_alpha is set, got {self.alpha!r}")
        if not self.log_std_min < self.log_std_max:
            raise ValueError(
                f"log_std_min must be < log_std_max, got {self.log_std_min}, {self.log_std_max}"
            )

    def _check_sharing(self) -> None:
        """Parameter sharing and neighbourhood critics: valid names and combinations."""
        for name, options in (("sharing", SHARING), ("critic", CRITICS),
                              ("shared_batch", SHARED_BATCHES)):
            check_choice(name, getattr(self, name), options)
        if isinstance(self.critic_k, bool) or not isinstance(self.critic_k, int) \
                or self.critic_k < 1:
            raise ValueError(f"critic_k must be an int >= 1, got {self.critic_k!r}")
        if self.sharing == "team" and self.critic == "joint":
            raise ValueError("sharing 'team' needs a critic whose input does not grow with the "
                             "agents: use --critic knearest, meanfield or pic")
        if self.shared_batch == "pairs" and self.sharing != "team":
            raise ValueError("shared_batch 'pairs' draws agents of a team-shared learner; it "
                             "needs --sharing team")
        if self.critic != "joint" and self.learners != "parallel":
            raise ValueError(f"learners {self.learners!r} is the joint critic's loop agent by "
                             f"agent; critic {self.critic!r} updates its groups in one vmap "
                             "(use --learners parallel)")
        if self.critic != "joint" and self.actor_step != "auto":
            raise ValueError(f"actor_step {self.actor_step!r} is a form of the joint critic's "
                             f"actor step; critic {self.critic!r} has one form (leave it auto)")


def actor_step_form(actor_step: str, num_agents: int) -> str:
    """The actor step's form (``"linear"`` or ``"full"``) that ``actor_step`` selects for an
    env of ``num_agents`` agents (``"auto"``: linear at every N; the argument is kept so
    that the choice may depend on N again)."""
    del num_agents
    return "linear" if actor_step == "auto" else actor_step
