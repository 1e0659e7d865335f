"""Frozen, typed configuration of a training run, with the seed papers' defaults.

A run's config is checked once, when it is made: its own fields, then its learner's record
(:class:`~jaxmarl_accel.algos.registry.AlgoSpec`), then its replay kind's
(:class:`~jaxmarl_accel.trainer.rounds.RoundSpec`, which the learner's family names).
Derived numbers (rounds, chunks, updates per round) come from the replay kind's schedule,
so that nothing is ever mutated after construction.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxmarl_accel.algos.registry import algo_spec, check_sampler, config_type, family_defaults
from jaxmarl_accel.buffers import INDEX_SHARING, LAYOUTS, NEXT_OBS, sampler_spec
from jaxmarl_accel.checks import check_choice
from jaxmarl_accel.trainer.rounds import round_of

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
      value from its config's ``REPLAY_DEFAULTS``
      (:func:`~jaxmarl_accel.algos.registry.family_defaults`), so that ``TrainConfig(algo="qmix")``
      has pymarl2's replay and ``TrainConfig()`` paper 001's. ``dataclasses.replace`` keeps
      them as resolved: to change ``algo`` to another family, build a new ``TrainConfig``.

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
        kind = round_of(self)
        if kind.check is not None:
            kind.check(self)


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
