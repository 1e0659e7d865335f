"""Frozen, typed configuration of a training run, with the seed papers' defaults.

Derived numbers (rounds, chunks, updates per round) come from small pure helpers so
that nothing is ever mutated after construction.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from jaxmarl_accel.algos.registry import (
    REPLAY_DEFAULTED,
    algo_spec,
    check_sampler,
    config_type,
    default_sampler,
    family_members,
    family_of,
    replay_of_learner,
)
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.buffers import INDEX_SHARING, LAYOUTS, NEXT_OBS, sampler_spec
from jaxmarl_accel.checks import check_choice, choice_message

PREY_MODES = ("trained", "scripted")
REPLAY_OBS = ("observation", "physical_state")


def _positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything a run depends on; hashable so that it can be a static argument.

    Attributes:
      env_kwargs: scenario keyword arguments as sorted ``(name, value)`` pairs.
      env: a registered scenario or a ``package.module:factory`` reference
        (``jaxmarl_accel.envs.make``).
      algo: a registered learner (:func:`jaxmarl_accel.algos.registered_algos`) or a
        ``package.module:SPEC`` reference to an :class:`~jaxmarl_accel.algos.AlgoSpec`.
      learner: the learner's hyperparameters, of its family's type
        (:func:`jaxmarl_accel.algos.config_type`): :class:`ActorCriticConfig` for MADDPG,
        MATD3 and MASAC, :class:`ValueConfig` for QMIX, VDN, IQL, OW-QMIX, CW-QMIX, MAC-PO
        and AccMER, :class:`OnPolicyConfig` for A2C and PPO; ``None`` (the default) is that
        type's defaults.

      Fields marked *family default* below take, when left ``None``, the learner family's
      value from its config's ``REPLAY_DEFAULTS`` (:func:`family_defaults`), so that
      ``TrainConfig(algo="qmix")`` has pymarl2's replay and ``TrainConfig()`` paper 001's.
      ``dataclasses.replace`` keeps them as resolved: to change ``algo`` to another family,
      build a new ``TrainConfig``.

      sampler: replay sampler name, one of :data:`SAMPLERS` (family default; MAC-PO's and
        AccMER's own), or ``package.module:factory`` naming a buffer factory or a
        ``SamplerSpec`` in user code.
      sampler_kwargs: sampler keyword arguments as sorted ``(name, value)`` pairs.
      layout: replay storage layout, one of :data:`LAYOUTS`.
      index_sharing: ``"shared"`` (one index set for all agents' learners) or
        ``"per_agent"`` (each learner draws its own, the original O(N^2 B) pattern).
      replay_next_obs: ``"stored"`` (every transition's ``next_obs`` is stored) or
        ``"next_slot"``: each observation is stored once and ``next_obs`` read from the same
        env's next slot, with pre-reset observations kept aside; same samples bit for bit,
        a smaller replay. Transition replay of envs whose episodes have a fixed length.
      replay_obs: ``"observation"`` (the replay keeps each joint step's observations) or
        ``"physical_state"``: it keeps the env's physical state instead (agents' positions
        and velocities, landmark positions: ``Env.physical_state``, spread and tag) and
        recomputes the observations with the env's own observation function (6 numbers
        per agent instead of 52 in k = 8 spread): joint critics get every agent of each
        sampled joint step observed when the replay samples; neighbourhood critics observe
        only the rows they read themselves (``Env.observe_physical_at``). The observations
        are the env's, bit for bit in spread (in tag the first of an episode to the last
        bit); runs agree to float rounding.
        Combines with replay_next_obs (next_slot: the next state is read from the next
        slot). Transition replay.
      buffer_capacity: transitions held by the replay buffer (episodes for episode
        replay; family default).
      batch_size: transitions (episodes) per update (family default).
      num_envs: environments stepped in parallel per seed (E; family default).
      total_env_steps: environment steps per seed (one env step = one step of one env); a
        multiple of max(num_envs, update_every). When it is not a multiple of eval_every,
        the last evaluation period is shorter (family default).
      update_every: environment steps between two updates of all agents.
      episode_updates: episode replay only: learner updates after each round of num_envs
        episodes, each on a batch of its own (1, as pymarl2; JaxMARL's SMAX QMIX makes
        NUM_EPOCHS = 8 per 2,048 env steps, about 3 per round of 16 battles of 2s3z).
      learning_starts: transitions collected before the first update (at least
        batch_size are; family default).
      eval_every: environment steps between two deterministic evaluations; a multiple of
        max(num_envs, update_every).
      eval_episodes: episodes per evaluation (run in parallel).
      prey: for predator-prey, ``"trained"`` or driven by the ``"scripted"`` policy
        (then a run's returns and scores average over the predators, its learners).
    """

    env: str = "simple_spread"
    env_kwargs: tuple[tuple[str, Any], ...] = ()
    algo: str = "maddpg"
    learner: Any = None
    sampler: str | None = None
    sampler_kwargs: tuple[tuple[str, Any], ...] = ()
    layout: str = "transition_major"
    index_sharing: str = "shared"
    replay_next_obs: str = "stored"
    replay_obs: str = "observation"
    buffer_capacity: int | None = None
    batch_size: int | None = None
    num_envs: int | None = None
    total_env_steps: int | None = None
    update_every: int = 100
    episode_updates: int = 1
    learning_starts: int | None = None
    eval_every: int = 50_000
    eval_episodes: int = 32
    prey: str = "trained"

    def __post_init__(self) -> None:
        spec = algo_spec(self.algo)
        for name, value in family_defaults(self.algo).items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        wanted = config_type(self.algo)
        if self.learner is None:
            object.__setattr__(self, "learner", wanted())
        elif not isinstance(self.learner, wanted):
            raise ValueError(f"learner: algo {self.algo!r} takes {wanted.__name__}, got "
                             f"{type(self.learner).__name__}")
        for name in ("buffer_capacity", "batch_size", "num_envs", "total_env_steps",
                     "update_every", "episode_updates", "eval_every", "eval_episodes"):
            _positive(name, getattr(self, name))
        if self.learning_starts < 0:
            raise ValueError(f"learning_starts must be >= 0, got {self.learning_starts}")
        sampler_spec(self.sampler)  # a registered sampler or a reference that loads
        for name, value, valid in (("layout", self.layout, tuple(LAYOUTS)),
                                   ("index_sharing", self.index_sharing, INDEX_SHARING),
                                   ("prey", self.prey, PREY_MODES),
                                   ("replay_next_obs", self.replay_next_obs, NEXT_OBS),
                                   ("replay_obs", self.replay_obs, REPLAY_OBS)):
            check_choice(name, value, valid)
        if spec.check is not None:
            spec.check(self)
        check_sampler(self.algo, self.sampler)
        if replay_of(self) == "rollout":
            self._check_rollout()
            return
        if replay_of(self) == "episode":
            self._check_episode_replay()
            return
        if self.episode_updates != 1:
            raise ValueError(f"episode_updates ({self.episode_updates}) applies to episode "
                             f"replay (recurrent value learners); algo {self.algo!r} updates "
                             "once per update_every env steps")
        big, small = max(self.num_envs, self.update_every), min(self.num_envs, self.update_every)
        if big % small:
            raise ValueError(
                f"num_envs ({self.num_envs}) and update_every ({self.update_every}) must divide "
                "one another so that updates fall on whole vectorized steps")
        if self.eval_every % steps_per_round(self):
            raise ValueError(
                f"eval_every ({self.eval_every}) must be a multiple of the env steps per "
                f"round ({steps_per_round(self)} = max(num_envs, update_every))")
        if self.total_env_steps % steps_per_round(self):
            raise ValueError(
                f"total_env_steps ({self.total_env_steps}) must be a multiple of the env steps "
                f"per round ({steps_per_round(self)} = max(num_envs, update_every))")
        if self.batch_size > self.buffer_capacity:
            raise ValueError(f"batch_size ({self.batch_size}) exceeds buffer_capacity "
                             f"({self.buffer_capacity})")


    def _check_rollout(self) -> None:
        """What a run without replay (its learner's own rollouts) accepts: the replay's
        fields at their defaults, every team trained."""
        defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
        defaults.update(family_defaults(self.algo))
        for name in REPLAY_FIELDS:
            if getattr(self, name) != defaults[name]:
                raise ValueError(f"{name} ({getattr(self, name)!r}) must keep its default: "
                                 f"algo {self.algo!r} keeps no replay and learns from its "
                                 "rollouts of rollout_length steps in num_envs envs")
        if self.prey != "trained":
            raise ValueError(f"prey {self.prey!r}: algo {self.algo!r} trains every team "
                             "(scripted prey are not supported by the on-policy learners)")

    def _check_episode_replay(self) -> None:
        """What episode replay accepts (its rounds do not use update_every)."""
        if self.layout not in ("transition_major", "episode"):
            raise ValueError(f"layout {self.layout!r}: episode replay stores whole episodes "
                             "slot-major ([C, T + 1, ...]); use transition_major or episode")
        if self.replay_next_obs != "stored":
            raise ValueError(f"replay_next_obs {self.replay_next_obs!r}: episode replay stores "
                             "whole episodes; use stored")
        if self.replay_obs != "observation":
            raise ValueError(f"replay_obs {self.replay_obs!r}: episode replay stores whole "
                             "episodes; use observation")
        if self.index_sharing != "shared":
            raise ValueError(f"index_sharing {self.index_sharing!r}: episode replay draws one "
                             "batch of episodes for all agents; use shared")
        if self.batch_size > self.buffer_capacity:
            raise ValueError(f"batch_size ({self.batch_size} episodes) exceeds buffer_capacity "
                             f"({self.buffer_capacity} episodes)")


REPLAY_FIELDS = ("sampler", "sampler_kwargs", "layout", "index_sharing", "replay_next_obs",
                  "replay_obs", "buffer_capacity", "batch_size", "update_every",
                  "episode_updates", "learning_starts")
"""TrainConfig fields of the replay, which runs without one (rollout learners) leave at
their defaults."""


def replay_of(config: TrainConfig) -> str:
    """The replay kind a run uses, the one its learner's family asks for
    (:func:`~jaxmarl_accel.algos.registry.replay_of_learner`):
    ``"episode"`` for recurrent value learners (``buffer_capacity`` and ``batch_size`` then
    count episodes; a round runs one episode per env, then ``episode_updates`` updates;
    ``update_every`` is not used), ``"rollout"`` for the on-policy learners (no replay: a
    round collects ``rollout_length`` steps of every env and learns from them) and ``"transition"``
    (single joint transitions) for the others."""
    return replay_of_learner(config.algo, config.learner)


DEFAULT_SAMPLER = "uniform"
"""The sampler of learners without their own (:func:`family_defaults`)."""

FAMILY_DEFAULTED = ("sampler", *REPLAY_DEFAULTED)
"""The ``TrainConfig`` fields whose default depends on the learner (``None`` resolves them)."""


def family_defaults(algo: str) -> dict[str, Any]:
    """The values the :data:`FAMILY_DEFAULTED` fields of a ``TrainConfig`` for learner
    ``algo`` take when left ``None``: its family's ``replay_defaults`` and its sampler
    (``"uniform"``, or the learner's own: MAC-PO's ``"per"``, AccMER's ``"reuse"``)."""
    own = default_sampler(algo)
    return {"sampler": DEFAULT_SAMPLER if own is None else own[0],
            **algo_spec(algo).family.replay_defaults}


class Paper004Setting(NamedTuple):
    """One of paper 004's learning settings (Sec. V-A/B): the stag hunt's miscapture
    punishment, the batch and replay sizes in episodes (Table II / III) and AccMER's weight
    decay gamma_W (Sec. V-B)."""

    punishment: float
    batch_size: int
    replay: int
    decay: float


PAPER004: dict[str, Paper004Setting] = {
    "paper004-p0": Paper004Setting(0.0, 256, 100_000, 1.0),     # Table II, Fig. 3a
    "paper004-p1.5": Paper004Setting(-1.5, 128, 10_000, 0.8),   # Table III, Fig. 3b
}
PRESETS: tuple[str, ...] = tuple(PAPER004)
PRESET_REPLAY_CAP = 20_000
"""Largest replay a preset asks for, in episodes. An episode of the 8-agent stag hunt
takes 195 KiB of replay (201 rows of uint8 observations and state, available actions,
actions, reward and flags), so Table II's 100,000 would be 18.6 GiB per seed and the cap is
3.7 GiB per seed (Table III's 10,000 are 1.9 GiB, below it). A run of 1.05M env steps
collects 5,256 episodes (8 envs x 657 rounds of 200 steps), so below 4M env steps the cap
drops no episode; AccMER's window keeps the paper's ``floor(d / b)`` with the paper's d."""


def preset(name: str, algo: str, replay_cap: int = PRESET_REPLAY_CAP) -> dict[str, Any]:
    """The :class:`TrainConfig` fields of one of paper 004's settings (:data:`PRESETS`)
    for value learner ``algo``, over the family's defaults (pymarl2's):

    * ``"paper004-p0"``: Table II, Fig. 3a: the stag hunt with 8 agents and 8 stags and no
      miscapture punishment, batches of 256 episodes, a replay of 100,000 episodes capped
      at ``replay_cap`` (:data:`PRESET_REPLAY_CAP`), AccMER's decay gamma_W 1.0;
    * ``"paper004-p1.5"``: Table III, Fig. 3b: punishment -1.5, batches of 128, a replay of
      10,000, gamma_W 0.8.

    Both: epsilon annealed from 0.995 (Sec. V-A) to 0.05 over 100K env steps; target
    copies every 200 episodes, learning rate 1e-3 and TD(lambda) 0.6 are the defaults
    already; AccMER's reuse window is ``floor(d / b)`` with the paper's replay size d
    (Alg. 1; 390 and 78 updates). ``TrainConfig(**preset(name, algo), algo=algo)`` is the
    run (:func:`preset_config`).
    """
    check_choice("preset", name, PRESETS)
    if family_of(algo) != "value":
        raise ValueError(f"preset {name!r} sets paper 004's value learners on the stag hunt; "
                         + choice_message("algo", algo, family_members("value")))
    _positive("replay_cap", replay_cap)
    setting = PAPER004[name]
    fields: dict[str, Any] = {
        "env": "stag_hunt",
        "env_kwargs": (("miscapture_punishment", setting.punishment), ("num_agents", 8),
                       ("num_stags", 8)),
        "batch_size": setting.batch_size,
        "buffer_capacity": min(setting.replay, replay_cap),
        "learner": ValueConfig(epsilon_start=0.995),
    }
    own = default_sampler(algo)
    if own is not None and own[0] == "reuse":
        fields["sampler_kwargs"] = (("decay", setting.decay),
                                    ("reuse_window", setting.replay // setting.batch_size))
    return fields


def preset_config(name: str, algo: str, **fields: Any) -> TrainConfig:
    """The :class:`TrainConfig` of preset ``name`` for ``algo`` (:func:`preset`), with
    ``fields`` set over it."""
    return TrainConfig(**{**preset(name, algo), "algo": algo, **fields})


def buffer_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The sampler keyword arguments a run's buffer is built with: the learner's defaults
    for its default sampler (MAC-PO with ``per``: ``alpha=1.0, beta=0.0, beta_final=0.0``;
    AccMER: ``reuse_ratio=0.5, loss_weights='ones', decay=1.0``) overridden by
    ``config.sampler_kwargs``."""
    own = default_sampler(config.algo)
    defaults = own[1] if own is not None and own[0] == config.sampler else {}
    return {**defaults, **dict(config.sampler_kwargs)}


def config_to_dict(config: TrainConfig) -> dict[str, Any]:
    """``config`` as plain JSON-ready values (keyword pairs as dicts, tuples as lists once
    dumped); :func:`config_from_dict` inverts it."""
    data = dataclasses.asdict(config)
    data["env_kwargs"] = dict(config.env_kwargs)
    data["sampler_kwargs"] = dict(config.sampler_kwargs)
    return data


def config_from_dict(data: dict[str, Any]) -> TrainConfig:
    """The :class:`TrainConfig` of :func:`config_to_dict`'s output (also after a JSON round
    trip, which turns tuples into lists); ``TypeError`` names unknown fields."""
    train = dict(data)
    algo = train.get("algo", TrainConfig.algo)
    learner = train.get("learner")
    if learner is not None:
        train["learner"] = config_type(algo)(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in learner.items()})
    train["env_kwargs"] = tuple(sorted(train["env_kwargs"].items()))
    train["sampler_kwargs"] = tuple(sorted(train["sampler_kwargs"].items()))
    return TrainConfig(**train)


def steps_per_round(config: TrainConfig) -> int:
    """Env steps per round: ``iters_per_round * num_envs`` vectorized steps, then updates."""
    return max(config.num_envs, config.update_every)


def iters_per_round(config: TrainConfig) -> int:
    """Vectorized env steps (each stepping all ``num_envs`` envs) in one round."""
    return steps_per_round(config) // config.num_envs


def updates_per_round(config: TrainConfig) -> int:
    """Updates of all agents after each round (one per ``update_every`` env steps)."""
    return steps_per_round(config) // config.update_every


def rounds_per_chunk(config: TrainConfig) -> int:
    """Rounds between two evaluations; one chunk is what the host loop runs at a time."""
    return config.eval_every // steps_per_round(config)


def total_rounds(config: TrainConfig) -> int:
    """Rounds in the whole run."""
    return config.total_env_steps // steps_per_round(config)


def first_update_step(config: TrainConfig) -> int:
    """Env steps per seed after which the learners are first updated: the first round
    that ends with at least ``max(learning_starts, batch_size)`` transitions collected."""
    start = max(config.learning_starts, config.batch_size)
    return -(-start // steps_per_round(config)) * steps_per_round(config)
