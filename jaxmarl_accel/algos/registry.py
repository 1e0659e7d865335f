"""The one registry of learners: one :class:`AlgoSpec` record per learner.

A record says everything the rest of the package asks about a learner: its name, its
:class:`Family` (the hyperparameter class, how to call the family, which replay a config of
it learns from, the run's replay defaults), how to build it, its default and accepted
samplers, and its checks of a run's settings. Nothing outside a learner's own package
branches on its name: the run's config, the trainer's rounds and the command line's flag
groups all read the records.

Each family registers its learners in its own package (``algos/<family>/specs.py``,
imported by :mod:`jaxmarl_accel.algos`); user code registers the same way::

    import jaxmarl_accel as jm
    jm.register_algo(jm.AlgoSpec(name="my_dqn", family=MY_FAMILY, build=my_build))

or names its record on the command line as ``--algo package.module:SPEC`` (``examples/
custom_learner.py``). ``algo_spec(name)`` finds a record by name or by such a reference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.checks import choice_message
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.user_code import ReferenceChoices, is_reference, load_record

REPLAY_DEFAULTED = ("buffer_capacity", "batch_size", "num_envs", "total_env_steps",
                    "learning_starts")
"""The run's fields (``TrainConfig``) whose default a learner family gives."""


@dataclasses.dataclass(frozen=True, eq=False)
class Family:
    """A learner family: learners that share one hyperparameter class and one skeleton.

    Attributes:
      name: identifier, e.g. ``"actor_critic"``.
      title: how help and errors call it, e.g. ``"actor-critic"``.
      config_type: its hyperparameter class, a frozen dataclass (hashable: a run's config is
        a static argument); the command line makes one flag per field.
      replay: ``config -> replay kind`` a learner of this family with ``config`` learns
        from, which names the trainer's round: the kind's record
        (:class:`~jaxmarl_accel.trainer.rounds.RoundSpec`), its registered name
        (``"transition"``: single joint transitions; ``"episode"``: whole episodes;
        ``"rollout"``: no replay, the rollout just collected) or a reference
        ``package.module:ROUND`` to one in user code.
      replay_defaults: the run's :data:`REPLAY_DEFAULTED` fields' defaults for the family
        (``buffer_capacity``, ``batch_size`` in the replay's items; ``num_envs``,
        ``total_env_steps``, ``learning_starts``).
      help: a line the command line adds to the family's flag group.
      choices: the valid values of the config's fields that name a mode (field -> values),
        which the command line offers as the flags' choices.
      sweepable: the config's float fields that change no array shape and no branch of the
        program, so the family's learners read them as values: a sweep
        (:mod:`jaxmarl_accel.trainer.sweep`) vmaps several settings of them in one program.
        Each must trace (``tests/trainer/test_sweep.py`` traces every declared field).
      observes_physical: ``config -> bool``, whether a learner with ``config`` observes the
        packed physical states of a ``replay_obs="physical_state"`` replay itself (built
        with :attr:`BuildContext.observe_at`: the actor-critic neighbourhood critics read
        only the rows they sample) rather than being handed every agent's observations;
        ``None``: never.
      exploration: ``(config, clocks [K] int) -> name -> [K]`` the family's exploration
        schedule on the run's clock (the value family's epsilon), which the command line
        reports beside the metrics; ``None`` for a family without one.
    """

    name: str
    title: str
    config_type: type
    replay: Callable[[Any], str]
    replay_defaults: Mapping[str, Any]
    help: str = ""
    choices: Mapping[str, tuple[Any, ...]] = dataclasses.field(default_factory=dict)
    sweepable: tuple[str, ...] = ()
    observes_physical: Callable[[Any], bool] | None = None
    exploration: Callable[[Any, Any], Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.config_type):
            raise ValueError(f"family {self.name!r}: config_type must be a dataclass, got "
                             f"{self.config_type!r}")
        missing = [name for name in REPLAY_DEFAULTED if name not in self.replay_defaults]
        if missing:
            raise ValueError(f"family {self.name!r}: replay_defaults lacks "
                             f"{', '.join(missing)}")
        fields = {field.name for field in dataclasses.fields(self.config_type)}
        unknown = [name for name in self.sweepable if name not in fields]
        if unknown:
            raise ValueError(f"family {self.name!r}: sweepable names {', '.join(unknown)}, not "
                             f"fields of {self.config_type.__name__}")


class BuildContext(NamedTuple):
    """What a run tells a learner's ``build`` besides the env spec and its config.

    Attributes:
      sampler: the run's replay sampler (``None`` outside a run).
      observe_at: for learners that observe packed physical states themselves (the
        neighbourhood critics with ``replay_obs="physical_state"``): the env's
        ``(physical [N, F], agents [M]) -> [M, obs_dim]``; ``None`` otherwise.
    """

    sampler: str | None = None
    observe_at: Callable[..., Any] | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class AlgoSpec:
    """One learner, registered once (:func:`register_algo`).

    Attributes:
      name: the ``--algo`` / ``TrainConfig.algo`` name.
      family: its :class:`Family`.
      build: ``(spec: EnvSpec, config, context: BuildContext) -> Algo``; raises a one-line
        ValueError for an env it cannot learn in.
      summary: one line for help and docs.
      sampler: its default replay sampler (``None``: the run's default, ``"uniform"``).
      sampler_kwargs: that sampler's default keyword arguments.
      samplers: the samplers it accepts (``None``: every sampler).
      check: ``TrainConfig -> None``, a one-line ValueError for settings of the run it cannot
        train with (beyond its config class's own checks); ``None`` for none.
      updates_per_round: ``config -> gradient steps per round`` as reported in the metrics
        (PPO's epochs x minibatches); ``None``: one.
      variant: the family's plug-in this learner is assembled from (an actor-critic
        ``Variant`` function, a value mixer, ...), for tools that inspect it; ``None`` if none.
      sweepable: the fields a sweep may vary for this learner (``None``: its family's
        :attr:`Family.sweepable`; A2C leaves out the PPO-only ones, which it refuses).
      phases: ``(spec: EnvSpec, config, context: BuildContext) -> phases``, the steps the
        learner's ``update`` is composed of (e.g. the actor-critic
        :class:`~jaxmarl_accel.algos.actor_critic.state.Phases`), for tools that run or time
        them apart (``experiments/characterize``); ``None`` for a learner without them.
    """

    name: str
    family: Family
    build: Callable[[EnvSpec, Any, BuildContext], Algo]
    summary: str = ""
    sampler: str | None = None
    sampler_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    samplers: tuple[str, ...] | None = None
    check: Callable[[Any], None] | None = None
    updates_per_round: Callable[[Any], int] | None = None
    variant: Any = None
    sweepable: tuple[str, ...] | None = None
    phases: Callable[[EnvSpec, Any, BuildContext], Any] | None = None


_ALGOS: dict[str, AlgoSpec] = {}


def register_algo(spec: AlgoSpec, *, replace: bool = False) -> AlgoSpec:
    """Register learner ``spec`` under ``spec.name`` and return it; a one-line ValueError
    when ``spec`` is not an :class:`AlgoSpec` or the name is taken (unless ``replace``)."""
    if not isinstance(spec, AlgoSpec):
        raise ValueError(f"register_algo takes an AlgoSpec, got {type(spec).__name__}")
    if not spec.name or not isinstance(spec.name, str):
        raise ValueError(f"register_algo: name must be a non-empty string, got {spec.name!r}")
    if spec.name in _ALGOS and _ALGOS[spec.name] is not spec and not replace:
        raise ValueError(f"algo {spec.name!r} is already registered (family "
                         f"{_ALGOS[spec.name].family.name!r}); choose another name")
    _ALGOS[spec.name] = spec
    return spec


def algo_spec(name: str) -> AlgoSpec:
    """The record of learner ``name``: a registered name, or a reference
    ``package.module:attr`` to an :class:`AlgoSpec` in user code (loaded and registered under
    the reference on first use). One-line ValueError otherwise."""
    if name in _ALGOS:
        return _ALGOS[name]
    if isinstance(name, str) and is_reference(name):
        spec = load_record(name, "algo", AlgoSpec)
        _ALGOS[name] = spec
        return spec
    raise ValueError(choice_message(
        "algo", name, (*(n for n in _ALGOS if not is_reference(n)), "package.module:SPEC")))


def registered_algos() -> tuple[str, ...]:
    """The registered learners' names, in registration order (the package's own first)."""
    return tuple(_ALGOS)


def families() -> dict[str, Family]:
    """The registered learners' families by name, in registration order."""
    return {spec.family.name: spec.family for spec in _ALGOS.values()}


def family_members(family: str) -> tuple[str, ...]:
    """The registered learners of family ``family``."""
    return tuple(name for name, spec in _ALGOS.items() if spec.family.name == family)


def family_of(name: str) -> str:
    """The family name of learner ``name`` (e.g. ``"actor_critic"``)."""
    return algo_spec(name).family.name


def config_type(name: str) -> type:
    """The hyperparameter class of learner ``name``."""
    return algo_spec(name).family.config_type


def variant_of(name: str, spec: EnvSpec, config: Any) -> Any:
    """The plug-in learner ``name`` is assembled from, applied to ``(spec, config)`` (e.g. an
    actor-critic learner's :class:`~jaxmarl_accel.algos.actor_critic.variant.Variant`)."""
    record = algo_spec(name)
    if record.variant is None:
        raise ValueError(f"algo {name!r} is not assembled from a plug-in")
    return record.variant(spec, config)


def sweepable_fields(name: str) -> tuple[str, ...]:
    """The hyperparameters a sweep may vary for learner ``name``: its record's
    :attr:`AlgoSpec.sweepable`, else its family's :attr:`Family.sweepable`."""
    record = algo_spec(name)
    return record.family.sweepable if record.sweepable is None else record.sweepable


def make_algo(name: str, spec: EnvSpec, config: Any,
              observe_at: Callable[..., Any] | None = None,
              sampler: str | None = None) -> Algo:
    """The learner ``name`` for environment ``spec`` as a bundle of pure functions.

    Args:
      name: a registered learner (:func:`registered_algos`) or a ``package.module:SPEC``
        reference.
      spec: static environment spec (agents, observation and action spaces).
      config: the learner's hyperparameters, of its family's class (:func:`config_type`).
      observe_at: neighbourhood critics only: the env's ``(physical [N, F], agents [M]) ->
        [M, obs_dim]`` (:class:`BuildContext`).
      sampler: the run's replay sampler, if known (MAC-PO's ``macpo_weighting="auto"``
        depends on it).

    Returns:
      :class:`~jaxmarl_accel.algos.base.Algo` (see its docstring for shapes).
    """
    record = algo_spec(name)
    if not isinstance(spec, EnvSpec):
        raise ValueError(f"spec must be an EnvSpec, got {type(spec).__name__}")
    wanted = record.family.config_type
    if not isinstance(config, wanted):
        raise ValueError(f"config must be of type {wanted.__name__} for algo {name!r}, got "
                         f"{type(config).__name__}")
    algo = record.build(spec, config, BuildContext(sampler=sampler, observe_at=observe_at))
    if not isinstance(algo, Algo):
        raise ValueError(f"algo {name!r}: its build returned {type(algo).__name__}, not a "
                         "jaxmarl_accel.Algo")
    return algo


def algo_phases(name: str, spec: EnvSpec, config: Any, sampler: str | None = None) -> Any:
    """The steps learner ``name``'s update is composed of for ``(spec, config)``
    (:attr:`AlgoSpec.phases`; ``sampler`` as in :func:`make_algo`), each a pure function on
    the state of ``make_algo(name, spec, config)``; a one-line ValueError for a learner
    without them."""
    record = algo_spec(name)
    if record.phases is None:
        raise ValueError(f"algo {name!r} does not split its update into phases")
    return record.phases(spec, config, BuildContext(sampler=sampler))


def algo_names() -> ReferenceChoices:
    """The valid ``--algo`` values (:class:`~jaxmarl_accel.user_code.ReferenceChoices`):
    the learners registered now and ``package.module:SPEC``."""
    return ReferenceChoices((*(n for n in _ALGOS if not is_reference(n)),
                             "package.module:SPEC"), _ALGOS)


def default_sampler(name: str) -> tuple[str, dict[str, Any]] | None:
    """``(sampler, its default keyword arguments)`` of a learner with its own default
    sampler (MAC-PO: PER; AccMER: the reuse sampler), ``None`` for the others."""
    record = algo_spec(name)
    return None if record.sampler is None else (record.sampler, dict(record.sampler_kwargs))


def check_sampler(name: str, sampler: str) -> None:
    """A one-line ValueError when learner ``name`` does not accept ``sampler``."""
    record = algo_spec(name)
    if record.samplers is not None and sampler not in record.samplers:
        raise ValueError(f"sampler {sampler!r}: algo {name!r} learns with "
                         f"{' or '.join(map(repr, record.samplers))}; use --sampler "
                         f"{record.samplers[0]}")


DEFAULT_SAMPLER = "uniform"
"""The sampler of learners without their own (:func:`family_defaults`)."""

FAMILY_DEFAULTED = ("sampler", *REPLAY_DEFAULTED)
"""The ``TrainConfig`` fields whose default depends on the learner (``None`` resolves them)."""


def family_defaults(name: str) -> dict[str, Any]:
    """The values the :data:`FAMILY_DEFAULTED` fields of a ``TrainConfig`` for learner
    ``name`` take when left ``None``: its family's ``replay_defaults`` and its sampler
    (``"uniform"``, or the learner's own: MAC-PO's ``"per"``, AccMER's ``"reuse"``)."""
    own = default_sampler(name)
    return {"sampler": DEFAULT_SAMPLER if own is None else own[0],
            **algo_spec(name).family.replay_defaults}


def buffer_kwargs(config: Any) -> dict[str, Any]:
    """The sampler keyword arguments a run's buffer is built with (``config``: its
    ``TrainConfig``): the learner's defaults for its default sampler (MAC-PO with ``per``:
    ``alpha=1.0, beta=0.0, beta_final=0.0``; AccMER: ``reuse_ratio=0.5,
    loss_weights='ones', decay=1.0``) overridden by ``config.sampler_kwargs``."""
    own = default_sampler(config.algo)
    defaults = own[1] if own is not None and own[0] == config.sampler else {}
    return {**defaults, **dict(config.sampler_kwargs)}


def observes_physical(config: Any) -> bool:
    """Whether a run of ``config`` (a ``TrainConfig``) with a physical-state replay hands
    its learner packed physical states, which it observes itself
    (:attr:`Family.observes_physical`), instead of every agent's observations."""
    hook = algo_spec(config.algo).family.observes_physical
    return (config.replay_obs == "physical_state" and hook is not None
            and bool(hook(config.learner)))


__all__ = ["DEFAULT_SAMPLER", "FAMILY_DEFAULTED", "REPLAY_DEFAULTED", "AlgoSpec",
           "BuildContext", "Family", "algo_names", "algo_phases", "algo_spec", "buffer_kwargs",
           "check_sampler", "config_type", "default_sampler", "families", "family_defaults",
           "family_members", "family_of", "make_algo", "observes_physical", "register_algo",
           "registered_algos", "sweepable_fields", "variant_of"]
