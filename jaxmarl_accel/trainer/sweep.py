"""A hyperparameter sweep as one program: settings ``vmap``ped beside seeds.

The learners read their hyperparameters from their config when the program is traced, so a
config whose swept fields hold traced scalars gives a program in which those fields are
values, not constants. A sweep's lane (one setting, one seed) builds its trainer inside the
trace from such a config; ``vmap`` over lanes then runs every setting x seed in one compiled
program, sharded over devices as seeds are (:mod:`~jaxmarl_accel.trainer.sharding`)::

    sweep = grid({"actor_lr": (0.01, 0.001), "tau": (0.01, 0.005)})  # 4 settings
    check_sweep(config, sweep)
    train = make_sweep_train(config, sweep.names)
    keys, values = lane_keys(key, sweep, seeds=2), lane_values(sweep, seeds=2)  # 8 lanes
    state, metrics = jax.jit(jax.vmap(train))(keys, values)  # leaves [8, ...]

Lanes are setting-major: lane ``k * S + s`` is setting ``k`` at seed ``s``, which starts from
the key seed ``s`` of a run of ``S`` seeds starts from, so it trains as that run with setting
``k`` would (within float32 rounding: a constant the compiler folds may round otherwise than
the same value read from an array). Only the fields a learner family declares
(:func:`~jaxmarl_accel.algos.registry.sweepable_fields`) can be swept: rates, discounts,
coefficients, exploration; fields that shape arrays or choose branches stay static. Each
lane's values live in its state (:attr:`TrainState.hyper`), so checkpoints and resume carry
them and the chunk program reads them from there.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel import config as cfg
from jaxmarl_accel.algos.registry import algo_spec, sweepable_fields
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer.train import ChunkMetrics, Trainer, TrainState, make_trainer

HYPER_DTYPE = jnp.float32
"""The dtype of a swept value inside the program."""


class Sweep(NamedTuple):
    """The settings of a sweep.

    Attributes:
      names: the swept fields of the learner's config, in order.
      values: ``K`` settings, each one number per name (in the order of ``names``).
    """

    names: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]

    @property
    def num_settings(self) -> int:
        """Settings K."""
        return len(self.values)

    def setting(self, k: int) -> dict[str, float]:
        """Setting ``k`` as ``{name: value}``."""
        return dict(zip(self.names, self.values[k], strict=True))

    def settings(self) -> list[dict[str, float]]:
        """Every setting as ``{name: value}``, in order."""
        return [self.setting(k) for k in range(self.num_settings)]


def grid(axes: Mapping[str, Sequence[float]]) -> Sweep:
    """The product of ``axes`` (name -> values), the last name varying fastest."""
    names = tuple(axes)
    values = tuple(tuple(float(v) for v in row)
                   for row in itertools.product(*(axes[name] for name in names)))
    return Sweep(names=names, values=values)


def sample_ranges(ranges: Mapping[str, tuple[str, float, float]], samples: int,
                  seed: int = 0) -> Sweep:
    """``samples`` settings drawn at random: each name's value from ``(kind, low, high)``,
    ``kind`` ``"log"`` (log-uniform) or ``"lin"`` (uniform), independently, by numpy's
    generator seeded with ``seed``."""
    if samples < 1:
        raise ValueError(f"sweep samples must be >= 1, got {samples}")
    rng = np.random.default_rng(seed)
    columns = []
    for name, (kind, low, high) in ranges.items():
        if kind == "log":
            if not 0 < low <= high:
                raise ValueError(f"sweep {name}=log:{low}:{high}: a log range needs "
                                 "0 < LOW <= HIGH")
            columns.append(np.exp(rng.uniform(math.log(low), math.log(high), samples)))
        elif kind == "lin":
            if not low <= high:
                raise ValueError(f"sweep {name}=lin:{low}:{high}: a range needs LOW <= HIGH")
            columns.append(rng.uniform(low, high, samples))
        else:
            raise ValueError(f"sweep {name}: range kind must be log or lin, got {kind!r}")
    return Sweep(names=tuple(ranges),
                 values=tuple(tuple(float(c[i]) for c in columns) for i in range(samples)))


def combine(first: Sweep, second: Sweep) -> Sweep:
    """Every setting of ``first`` with every setting of ``second`` (names disjoint)."""
    if not first.names:
        return second
    if not second.names:
        return first
    return Sweep(names=first.names + second.names,
                 values=tuple(a + b for a in first.values for b in second.values))


def check_sweep(config: cfg.TrainConfig, sweep: Sweep) -> None:
    """A one-line ValueError for a sweep ``config``'s learner cannot run: a name that is no
    field of its config, a field it cannot sweep (one that shapes arrays or chooses a
    branch), a value that is no number, no settings, or a setting its config refuses."""
    learner_type = type(config.learner)
    fields = {field.name for field in dataclasses.fields(learner_type)}
    can = sweepable_fields(config.algo)
    listed = ", ".join(can) if can else "none"
    if not sweep.names or not sweep.values:
        raise ValueError("sweep: no settings to run")
    if len(set(sweep.names)) < len(sweep.names):
        raise ValueError(f"sweep: a field is named twice ({', '.join(sweep.names)})")
    for name in sweep.names:
        if name not in fields:
            raise ValueError(f"sweep: {name!r} is not a field of {learner_type.__name__} "
                             f"(algo {config.algo!r}); it can sweep {listed}")
        if name not in can and name in algo_spec(config.algo).family.sweepable:
            raise ValueError(f"sweep: algo {config.algo!r} does not read {name!r}; it can "
                             f"sweep {listed}")
        if name not in can:
            raise ValueError(f"sweep: {name!r} changes an array shape or a branch of the "
                             f"program of algo {config.algo!r}; it can sweep {listed}")
    for k, row in enumerate(sweep.values):
        for name, value in zip(sweep.names, row, strict=True):
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value):
                raise ValueError(f"sweep: {name} must be a finite number, got {value!r}")
        try:
            setting_config(config, sweep, k)
        except ValueError as error:
            raise ValueError(f"sweep setting {k} ({format_setting(sweep.setting(k))}): "
                             f"{error}") from None


def format_setting(setting: Mapping[str, float]) -> str:
    """``"actor_lr=0.01, tau=0.005"``."""
    return ", ".join(f"{name}={value:g}" for name, value in setting.items())


def setting_config(config: cfg.TrainConfig, sweep: Sweep, k: int) -> cfg.TrainConfig:
    """The run ``config`` with setting ``k`` of ``sweep`` (validated, as a run of its own)."""
    learner = dataclasses.replace(config.learner, **sweep.setting(k))
    return dataclasses.replace(config, learner=learner)


def with_values(config: cfg.TrainConfig, hyper: Mapping[str, Any]) -> cfg.TrainConfig:
    """``config`` whose learner's fields ``hyper`` names hold ``hyper``'s values (traced
    scalars inside a sweep's program). Not validated, not hashable: :func:`check_sweep`
    validates every concrete setting first."""
    learner = copy.copy(config.learner)
    for name, value in hyper.items():
        object.__setattr__(learner, name, value)
    traced = copy.copy(config)
    object.__setattr__(traced, "learner", learner)
    return traced


def lane_keys(key: jax.Array, sweep: Sweep, seeds: int) -> jax.Array:
    """``[K * S]`` keys, setting-major: lane ``k * S + s`` starts from
    ``jax.random.split(key, S)[s]``, the key of seed ``s`` of a run of ``S`` seeds."""
    return jnp.concatenate([jax.random.split(key, seeds)] * sweep.num_settings)


def lane_values(sweep: Sweep, seeds: int) -> dict[str, jax.Array]:
    """Name -> ``[K * S]`` float32: lane ``k * S + s`` holds setting ``k``'s value."""
    table = np.asarray(sweep.values, np.float64).reshape(sweep.num_settings, len(sweep.names))
    return {name: jnp.asarray(np.repeat(table[:, i], seeds), HYPER_DTYPE)
            for i, name in enumerate(sweep.names)}


def make_sweep_train(config: cfg.TrainConfig, names: Sequence[str]
                     ) -> Callable[[jax.Array, dict[str, jax.Array]],
                                   tuple[TrainState, ChunkMetrics]]:
    """``train(key, hyper) -> (final TrainState, ChunkMetrics [num_chunks])`` for one lane.

    Args:
      config: the run; its learner's fields ``names`` are replaced by ``hyper``'s values.
      names: the swept fields (:func:`check_sweep` them first).

    Returns:
      ``train``: ``key`` a PRNG key, ``hyper`` name -> ``[]`` float32;
      ``jax.jit(jax.vmap(train))(lane_keys(...), lane_values(...))`` runs every lane in one
      program (leaves ``[K * S, ...]``); the final state holds ``hyper``.
    """
    made = make(config.env, **dict(config.env_kwargs))
    wanted = tuple(names)

    def train(key: jax.Array, hyper: dict[str, jax.Array]) -> tuple[TrainState, ChunkMetrics]:
        if set(hyper) != set(wanted):
            raise ValueError(f"hyper names {sorted(hyper)}, the sweep {sorted(wanted)}")
        state, metrics = make_trainer(with_values(config, hyper), made).train(key)
        return state.replace(hyper=dict(hyper)), metrics

    return train


class SweepTrainer(NamedTuple):
    """A sweep's lanes for the host loop (settings x seeds as one lane axis).

    Attributes:
      sweep: the settings.
      seeds: seeds S per setting.
      trainer: the base run's :class:`Trainer` whose ``run_chunk`` reads each lane's values
        from its state (``(TrainState, chunk_index) -> (TrainState, ChunkMetrics)``, one
        lane); its other pieces are the base config's, shared by every setting (env,
        schedule, chunks).
      init_lanes: ``key -> TrainState`` with leaves ``[K * S, ...]`` (:func:`lane_keys`,
        :func:`lane_values`), for :func:`~jaxmarl_accel.trainer.sharding.make_sharded_trainer`.
      setting_trainer: ``k -> Trainer`` of setting ``k`` alone (for evaluation).
    """

    sweep: Sweep
    seeds: int
    trainer: Trainer
    init_lanes: Callable[[jax.Array], TrainState]
    setting_trainer: Callable[[int], Trainer]

    @property
    def lanes(self) -> int:
        """Lanes K x S."""
        return self.sweep.num_settings * self.seeds


def lane_groups(sweep: Sweep | None, platform: str, num_devices: int) -> int:
    """How many groups a chunk runs a sweep's lanes in, one group after another
    (:func:`~jaxmarl_accel.trainer.sharding.in_groups`): on one CPU device, one group per
    setting (each op's tensors then stay as wide as one setting's seeds, and in the
    caches); elsewhere every lane at once (a GPU fills with the width)."""
    if sweep is None or platform != "cpu" or num_devices != 1:
        return 1
    return sweep.num_settings


def make_sweep_trainer(config: cfg.TrainConfig, sweep: Sweep, seeds: int,
                       base: Trainer | None = None) -> SweepTrainer:
    """The :class:`SweepTrainer` of ``sweep`` over ``config`` with ``seeds`` seeds per
    setting; a one-line ValueError for a sweep :func:`check_sweep` refuses. ``base``: the
    trainer of ``config`` already built (its env is reused), ``None`` builds it."""
    check_sweep(config, sweep)
    if base is None:
        made = make(config.env, **dict(config.env_kwargs))
        base = make_trainer(config, made)
    made = (base.env, base.env_params)

    def lane(hyper: Mapping[str, jax.Array]) -> Trainer:
        return make_trainer(with_values(config, hyper), made) if hyper else base

    def init(key: jax.Array, hyper: dict[str, jax.Array]) -> TrainState:
        return lane(hyper).init(key).replace(hyper=dict(hyper))

    def run_chunk(state: TrainState, chunk_index: jax.Array
                  ) -> tuple[TrainState, ChunkMetrics]:
        return lane(state.hyper).run_chunk(state, chunk_index)

    def init_lanes(key: jax.Array) -> TrainState:
        return jax.vmap(init)(lane_keys(key, sweep, seeds), lane_values(sweep, seeds))

    def setting_trainer(k: int) -> Trainer:
        return make_trainer(setting_config(config, sweep, k), made)

    return SweepTrainer(sweep=sweep, seeds=seeds, trainer=base._replace(run_chunk=run_chunk),
                        init_lanes=init_lanes, setting_trainer=setting_trainer)


__all__ = ["HYPER_DTYPE", "Sweep", "SweepTrainer", "check_sweep", "combine", "format_setting",
           "grid", "lane_groups", "lane_keys", "lane_values", "make_sweep_train",
           "make_sweep_trainer", "sample_ranges", "setting_config", "with_values"]
