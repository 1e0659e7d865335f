"""Hyperparameters of the value-based learners (QMIX, VDN, IQL, OW-/CW-QMIX, MAC-PO, AccMER).

Defaults are the settings of paper 004's reference code (pymarl2's QMIX): a shared agent
network Dense 64 -> ReLU -> GRU 64 -> Dense, a QMIX mixer with embedding 32 and
hypernetworks of 64 units, Adam 1e-3, gamma 0.99, TD(lambda) with lambda 0.6, gradient
clipping at norm 10, hard target updates every 200 episodes, and epsilon-greedy exploration
annealed linearly from 1.0 to 0.05 over 100K env steps; for the learners with weighted
QMIX's ``Q*`` pymarl2's ``ow_qmix`` / ``cw_qmix``: a feed-forward ``Q*`` mixer of 3 layers
of 256 units and ``w = 0.1``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

from jaxmarl_accel.checks import check_choice, check_counts

AGENTS = ("rnn", "mlp")
NORMALIZATIONS = ("minmax", "mean", "none")
MACPO_WEIGHTINGS = ("auto", "priority", "loss", "both")


@dataclasses.dataclass(frozen=True)
class ValueConfig:
    """Value-learner hyperparameters (frozen; shared by every value-based learner).

    Attributes:
      agent: the shared agent network: ``"rnn"`` (Dense -> ReLU -> GRU -> Dense over the
        episode, input observation + agent one-hot + previous action one-hot; learns from
        whole episodes) or ``"mlp"`` (Dense -> ReLU -> Dense -> ReLU -> Dense on the
        observation + agent one-hot; learns from single transitions).
      agent_ids: ``"rnn"`` only: whether the agent network (and ``Q*``'s) sees its one-hot
        id (pymarl's ``obs_agent_id``; the AccMER authors' stag-hunt configs set it off).
      agent_q_min, agent_q_max: ``"rnn"`` only: bounds the agent network's Q-values are
        clamped to (none: unbounded; the authors' ``rnn`` agent, which their MAC-PO and
        WQMIX runs use, clamps to -5 and 2); ``Q*``'s agent network is not clamped.
      hidden: width of the agent network's hidden layers (and of its GRU state); also of
        ``Q*``'s own agent network (pymarl2's ``central_rnn_hidden_dim``, 64).
      mixer_embed: width of the QMIX mixing layer (``embed_dim`` in QMIX).
      hypernet_hidden: width of the hidden layer of QMIX's weight hypernetworks.
      lr: Adam learning rate of the agent network and mixer together.
      gamma: discount factor.
      reward_scale: factor of the team reward in every target (the learner's only; returns
        and metrics stay the env's). JaxMARL's SMAX baselines use 10 "to the original scale
        of SMAC", whose rewards pymarl scales to 20 per won battle; 1 leaves the env's.
      td_lambda: lambda of the TD(lambda) targets over an episode (0 gives one-step
        targets, 1 Monte-Carlo returns bootstrapped at the episode's end); ignored by
        ``"mlp"`` agents, whose transitions give one-step targets.
      grad_clip: maximum global norm of the gradient of all parameters.
      target_update_episodes: the target networks are copied from the online ones once
        this many episodes have finished since the last copy.
      epsilon_start: exploration rate at env step 0.
      epsilon_finish: exploration rate after the annealing.
      epsilon_anneal_steps: env steps over which epsilon falls linearly from
        ``epsilon_start`` to ``epsilon_finish``.
      double_q: evaluate the target network at the online network's greedy actions
        (double Q-learning) instead of at the target network's own greedy actions.
      qstar_hidden: OW-/CW-QMIX, MAC-PO, AccMER: width of the hidden layers of the
        feed-forward mixer of the unrestricted centralized value ``Q*`` and of its state
        value V(s) (:class:`~jaxmarl_accel.algos.value.central.QStarNet`).
      qstar_layers: OW-/CW-QMIX, MAC-PO, AccMER: number of ReLU hidden layers of ``Q*``'s
        mixer.
      wqmix_w: OW-/CW-QMIX only: the weight w in (0, 1] of the QMIX loss on the steps the
        weighting does not favour (Rashid et al. 2020, alpha there); 1 is QMIX's unweighted
        loss (against ``Q*``'s targets).
      macpo_weighting: MAC-PO / AccMER only: where Lemma 1's weights act (paper 004, eq.
        1-2): ``"priority"`` (each replayed episode's sampling priority; the loss is not
        weighted by them), ``"loss"`` (they weight each step's squared error, normalized
        by ``macpo_normalization``), ``"both"``, or ``"auto"``: ``"both"`` for AccMER (eq.
        1 is its loss, Alg. 1 ranks its table by them), for MAC-PO ``"priority"`` when the
        run's sampler draws by priority (its default, ``per``), ``"loss"`` otherwise.
      macpo_normalization: MAC-PO / AccMER only: how a batch's optimal weights (paper 004,
        eq. 2) are normalized before they weight the loss: ``"minmax"`` (onto
        ``[macpo_floor, 1]``), ``"mean"`` (divided by their mean over the batch's filled
        steps) or ``"none"`` (:func:`~jaxmarl_accel.algos.value.macpo.normalize`).
      macpo_floor: MAC-PO / AccMER only: the smallest loss weight of ``"minmax"``, in [0, 1].
      train_rows: recurrent agents only: the updates learn from the first ``train_rows``
        steps of each replayed episode (0: all ``T``). An episode that ran longer is cut
        there as if truncated: its last kept step bootstraps from the row after it, and
        its later steps are not learned from (the ``cut_episodes`` metric gives the
        fraction of each batch cut). The unroll, mixer and targets then run over
        ``train_rows + 1`` rows instead of ``T + 1``: on envs whose episodes mostly end
        well before their limit (SMAX 3m: about 16 of 100 steps once learned) it removes
        most of an update's work on padding rows.
    """

    REPLAY_DEFAULTS: ClassVar[dict[str, Any]] = {
        "buffer_capacity": 5000, "batch_size": 128, "num_envs": 8,
        "total_env_steps": 1_050_000, "learning_starts": 0}
    """The run's replay and schedule defaults for value learners (``TrainConfig`` fields left
    ``None``): paper 004's reference code (pymarl2's QMIX), 5000 episodes of replay, batches of
    128 episodes, 8 envs, 1.05M env steps; updates start once the replay holds a batch."""

    agent: str = "rnn"
    agent_ids: bool = True
    agent_q_min: float | None = None
    agent_q_max: float | None = None
    hidden: int = 64
    mixer_embed: int = 32
    hypernet_hidden: int = 64
    lr: float = 1e-3
    gamma: float = 0.99
    reward_scale: float = 1.0
    td_lambda: float = 0.6
    grad_clip: float = 10.0
    target_update_episodes: int = 200
    epsilon_start: float = 1.0
    epsilon_finish: float = 0.05
    epsilon_anneal_steps: int = 100_000
    double_q: bool = True
    qstar_hidden: int = 256
    qstar_layers: int = 3
    wqmix_w: float = 0.1
    macpo_weighting: str = "auto"
    macpo_normalization: str = "minmax"
    macpo_floor: float = 0.1
    train_rows: int = 0

    def __post_init__(self) -> None:
        check_choice("agent", self.agent, AGENTS)
        check_choice("macpo_weighting", self.macpo_weighting, MACPO_WEIGHTINGS)
        check_choice("macpo_normalization", self.macpo_normalization, NORMALIZATIONS)
        check_counts(self, ("hidden", "mixer_embed", "hypernet_hidden", "target_update_episodes",
                            "epsilon_anneal_steps", "qstar_hidden", "qstar_layers"))
        for name in ("lr", "grad_clip", "reward_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("gamma", "td_lambda", "epsilon_start", "epsilon_finish", "macpo_floor"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)!r}")
        bad_w = isinstance(self.wqmix_w, bool) or not isinstance(self.wqmix_w, int | float)
        if bad_w or not 0.0 < self.wqmix_w <= 1.0:
            raise ValueError(f"wqmix_w must lie in (0, 1], got {self.wqmix_w!r}")
        if self.epsilon_finish > self.epsilon_start:
            raise ValueError(f"epsilon_finish must be <= epsilon_start ({self.epsilon_start}), "
                             f"got {self.epsilon_finish!r}")
        if (not isinstance(self.train_rows, int) or isinstance(self.train_rows, bool)
                or self.train_rows < 0):
            raise ValueError(f"train_rows must be an int >= 0 (0: every row), got "
                             f"{self.train_rows!r}")
        if self.train_rows and self.agent != "rnn":
            raise ValueError("train_rows cuts replayed episodes: it needs agent 'rnn' (an "
                             "'mlp' agent learns from single transitions)")
        self._check_agent_options()
        if not isinstance(self.double_q, bool):
            raise ValueError(f"double_q must be a bool, got {self.double_q!r}")

    def _check_agent_options(self) -> None:
        if not isinstance(self.agent_ids, bool):
            raise ValueError(f"agent_ids must be a bool, got {self.agent_ids!r}")
        bounds = (self.agent_q_min, self.agent_q_max)
        for name, value in zip(("agent_q_min", "agent_q_max"), bounds, strict=True):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number or none, got {value!r}")
        if None not in bounds and not bounds[0] < bounds[1]:
            raise ValueError(f"agent_q_min must be < agent_q_max ({bounds[1]}), got "
                             f"{bounds[0]!r}")
        if self.agent != "rnn" and (not self.agent_ids or bounds != (None, None)):
            raise ValueError("agent_ids and agent_q_min/agent_q_max need agent 'rnn' (the "
                             "'mlp' agent always sees its id and is not clamped)")


def replay_kind(config: ValueConfig) -> str:
    """The replay a value learner with ``config`` learns from: whole episodes for the
    recurrent agent (``"episode"``), single transitions for the feed-forward one
    (``"transition"``)."""
    return "episode" if config.agent == "rnn" else "transition"
