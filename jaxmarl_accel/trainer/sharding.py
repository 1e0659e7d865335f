"""Seeds (and environments) sharded over devices with :mod:`jax.sharding`.

A run of ``S`` seeds is laid out on a two-axis device mesh ``("seeds", "envs")`` of shape
``[seed_shards, env_shards]``: the leading seed axis of every leaf of the vmapped
:class:`~jaxmarl_accel.trainer.train.TrainState` is split over ``"seeds"`` (each device holds the
parameters, buffer and envs of its ``S / seed_shards`` seeds), and the environment axis
``[E]`` of the env states, observations and running returns is further split over
``"envs"`` (each device steps ``E / env_shards`` envs of its seeds). The chunk function is
jitted with these shardings as ``in_shardings`` and ``out_shardings``, with the state
donated, so every device runs its own seeds in place; the per-chunk metrics come back
replicated (gathered), ready for the host.

The same code runs on one device (a ``[1, 1]`` mesh: today's single-device program), on
all local devices, and on the devices of several hosts after
``jax.distributed.initialize()``; the random streams do not depend on the layout
(``jax_threefry_partitionable``), so every layout computes the same numbers::

    layout = plan_layout(seeds=8, num_envs=10, num_devices=jax.device_count())
    sharded = make_sharded_trainer(make_trainer(config), layout, seeds=8)
    state = sharded.init(jax.random.PRNGKey(0))
    state, metrics = sharded.run_chunk(state, 0)  # metrics: leaves [S, ...], replicated
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxmarl_accel.trainer.compiling import compiler_options
from jaxmarl_accel.trainer.train import ChunkMetrics, Trainer, TrainState
from jaxmarl_accel.types import PyTree

SEED_AXIS = "seeds"
ENV_AXIS = "envs"
ENV_FIELDS = ("env_state", "obs", "episode_return", "episode_stats", "carry")


class DeviceLayout(NamedTuple):
    """How a run is split over devices.

    Attributes:
      seed_shards: devices along the mesh's seed axis (each holds ``S / seed_shards`` seeds).
      env_shards: devices along the env axis (each steps ``E / env_shards`` envs per seed).
    """

    seed_shards: int
    env_shards: int

    @property
    def num_devices(self) -> int:
        """Devices the layout occupies."""
        return self.seed_shards * self.env_shards


def plan_layout(seeds: int, num_envs: int, num_devices: int,
                env_shards: int | None = None) -> DeviceLayout:
    """The layout of ``seeds`` seeds of ``num_envs`` envs on ``num_devices`` devices.

    Without ``env_shards``, the seeds are split over ``gcd(seeds, num_devices)`` devices
    and each seed's envs over the remaining factor: over every device when the seeds
    divide evenly, and e.g. 2 seeds on 8 devices give each seed 4 devices for its envs.

    Raises:
      ValueError: (one line) when the seeds or envs do not divide evenly.
    """
    for name, value in (("seeds", seeds), ("num_envs", num_envs), ("num_devices", num_devices)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if env_shards is None:
        seed_shards = math.gcd(seeds, num_devices)
        if num_envs % (num_devices // seed_shards):
            raise ValueError(
                f"seeds ({seeds}) must divide evenly over {num_devices} devices (or split "
                f"num_envs ({num_envs}) over {num_devices // seed_shards} devices per seed "
                "group); change --seeds, --devices or --num-envs")
        return DeviceLayout(seed_shards=seed_shards, env_shards=num_devices // seed_shards)
    if env_shards < 1 or num_devices % env_shards:
        raise ValueError(f"env_shards ({env_shards}) must divide the number of devices "
                         f"({num_devices})")
    seed_shards = num_devices // env_shards
    if seeds % seed_shards:
        raise ValueError(f"seeds ({seeds}) must divide evenly over {seed_shards} devices; use a "
                         f"multiple of {seed_shards} seeds or fewer devices")
    if num_envs % env_shards:
        raise ValueError(f"num_envs ({num_envs}) must divide evenly over {env_shards} devices "
                         f"per seed; use a multiple of {env_shards} envs or fewer devices")
    return DeviceLayout(seed_shards=seed_shards, env_shards=env_shards)


def auto_layout(seeds: int, num_envs: int, max_devices: int) -> DeviceLayout:
    """The valid layout (:func:`plan_layout`) on the most devices, at most ``max_devices``."""
    for count in range(max_devices, 0, -1):
        try:
            return plan_layout(seeds, num_envs, count)
        except ValueError:
            continue
    raise ValueError(f"no device layout for {seeds} seed(s) of {num_envs} envs")


def make_mesh(layout: DeviceLayout, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A ``("seeds", "envs")`` mesh of shape ``[seed_shards, env_shards]`` on the first
    ``layout.num_devices`` of ``devices`` (default: ``jax.devices()``, every process's)."""
    devices = list(jax.devices() if devices is None else devices)
    if layout.num_devices > len(devices):
        raise ValueError(f"the layout needs {layout.num_devices} devices but only "
                         f"{len(devices)} are available")
    grid = np.asarray(devices[:layout.num_devices], dtype=object)
    return Mesh(grid.reshape(layout.seed_shards, layout.env_shards), (SEED_AXIS, ENV_AXIS))


def state_shardings(mesh: Mesh, state: PyTree) -> PyTree:
    """NamedShardings of a vmapped :class:`TrainState` (or any tree of its shape).

    Every leaf is split on its leading seed axis over ``"seeds"``; the leaves of
    ``env_state``, ``obs``, ``episode_return``, ``episode_stats`` and ``carry`` (``[S, E,
    ...]``) also on their env axis over ``"envs"``.
    """
    by_seed = NamedSharding(mesh, PartitionSpec(SEED_AXIS))
    by_seed_and_env = NamedSharding(mesh, PartitionSpec(SEED_AXIS, ENV_AXIS))

    def sharding(path: tuple, leaf: Any) -> NamedSharding:
        field = getattr(path[0], "name", None) if path else None
        return by_seed_and_env if field in ENV_FIELDS and leaf.ndim >= 2 else by_seed

    return jax.tree_util.tree_map_with_path(sharding, state)


def replicated(mesh: Mesh) -> NamedSharding:
    """A sharding that keeps a full copy on every device of ``mesh``."""
    return NamedSharding(mesh, PartitionSpec())


def in_groups(run_chunk: Callable[[TrainState, Any], tuple[TrainState, ChunkMetrics]],
              groups: int = 1) -> Callable[[TrainState, Any], tuple[TrainState, ChunkMetrics]]:
    """``run_chunk`` of one lane over lanes ``[L, ...]``: one ``vmap`` over all of them, or
    (``groups`` > 1) a loop over ``groups`` consecutive groups of ``L / groups`` lanes, each
    group a ``vmap``. The numbers are the same; on a CPU the groups keep each op's tensors a
    group wide, so they stay in the caches (a 36-lane chunk of MATD3 ran slower per lane
    than a 4-lane one on the 2-core machine, docs/sweeps.md), and the temporaries are a
    group's. The loop (a ``scan`` over the group index) carries the whole state and writes
    each group's result back in place (``dynamic_update_slice``), so the replay is not
    copied: a ``lax.map`` over the groups would hold its input and its stacked output at
    once, two copies of every lane's replay. The groups' metrics are the scan's outputs
    ``[groups, L / groups, ...]``, merged to ``[L, ...]``; the chunk is traced once."""
    lanes = jax.vmap(run_chunk, in_axes=(0, None))
    if groups == 1:
        return lanes

    def chunk(state: TrainState, index: Any) -> tuple[TrainState, ChunkMetrics]:
        size = jax.tree.leaves(state)[0].shape[0] // groups

        def body(whole: TrainState, g: Any) -> tuple[TrainState, ChunkMetrics]:
            start = g * size
            part, part_metrics = lanes(jax.tree.map(
                lambda x: jax.lax.dynamic_slice_in_dim(x, start, size), whole), index)
            whole = jax.tree.map(lambda x, y: jax.lax.dynamic_update_slice_in_dim(
                x, y, start, 0), whole, part)
            return whole, part_metrics

        state, metrics = jax.lax.scan(body, state, jnp.arange(groups))
        return state, jax.tree.map(lambda m: m.reshape(groups * size, *m.shape[2:]), metrics)

    return chunk


class ShardedTrainer(NamedTuple):
    """A :class:`Trainer`'s seeds laid out on a mesh.

    Attributes:
      trainer: the single-seed trainer.
      mesh: the ``("seeds", "envs")`` device mesh.
      seeds: number of seeds S.
      abstract_state: ``jax.ShapeDtypeStruct`` tree of the vmapped state, with shardings.
      shardings: NamedSharding tree of the vmapped state.
      init: ``key -> TrainState`` (leaves ``[S, ...]``, sharded); seed ``i`` starts from
        ``jax.random.split(key, S)[i]``, as in the single-device host loop.
      run_chunk: ``(TrainState [S], chunk_index) -> (TrainState [S], ChunkMetrics [S])``;
        the state is donated and stays sharded, the metrics are replicated.
      first_seed: ``tree [S, ...] -> tree [...]`` of seed 0, replicated (readable on every
        host).
    """

    trainer: Trainer
    mesh: Mesh
    seeds: int
    abstract_state: PyTree
    shardings: PyTree
    init: Callable[[jax.Array], TrainState]
    run_chunk: Callable[[TrainState, Any], tuple[TrainState, ChunkMetrics]]
    first_seed: Callable[[PyTree], PyTree]


def make_sharded_trainer(trainer: Trainer, layout: DeviceLayout, seeds: int,
                         devices: Sequence[jax.Device] | None = None,
                         init_lanes: Callable[[jax.Array], TrainState] | None = None,
                         lane_groups: int = 1) -> ShardedTrainer:
    """Jit ``trainer``'s init and chunk for ``seeds`` seeds sharded as ``layout`` says, with
    :func:`~jaxmarl_accel.trainer.compiling.compiler_options` for the devices' platform.

    ``init_lanes``: ``key -> TrainState`` with leaves ``[seeds, ...]`` in place of the
    ``vmap`` of ``trainer.init`` over ``jax.random.split(key, seeds)`` (a sweep's lanes,
    settings x seeds, :mod:`~jaxmarl_accel.trainer.sweep`, whose ``seeds`` counts lanes).
    ``lane_groups``: on one device, the chunk runs the lanes in this many groups one after
    another (:func:`in_groups`) instead of all in one ``vmap``.

    Raises:
      ValueError: when ``seeds`` or the trainer's envs do not fit the layout.
    """
    plan_layout(seeds, trainer.config.num_envs, layout.num_devices, layout.env_shards)
    if lane_groups > 1 and (layout.num_devices > 1 or seeds % lane_groups):
        raise ValueError(f"lane_groups ({lane_groups}) needs one device and lanes ({seeds}) "
                         "that divide into the groups")
    mesh = make_mesh(layout, devices)

    def init_all(key: jax.Array) -> TrainState:
        if init_lanes is not None:
            return init_lanes(key)
        return jax.vmap(trainer.init)(jax.random.split(key, seeds))

    shapes = jax.eval_shape(init_all, jax.random.PRNGKey(0))
    shardings = state_shardings(mesh, shapes)
    abstract = jax.tree.map(lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh),
                            shapes, shardings)
    full = replicated(mesh)
    options = compiler_options(mesh.devices.flat[0].platform)
    init = jax.jit(init_all, in_shardings=full, out_shardings=shardings,
                   compiler_options=options)
    run_chunk = jax.jit(in_groups(trainer.run_chunk, lane_groups),
                        in_shardings=(shardings, full), out_shardings=(shardings, full),
                        donate_argnums=0, compiler_options=options)
    first_seed = jax.jit(lambda tree: jax.tree.map(lambda x: x[0], tree), out_shardings=full)
    return ShardedTrainer(trainer=trainer, mesh=mesh, seeds=seeds, abstract_state=abstract,
                          shardings=shardings, init=init, run_chunk=run_chunk,
                          first_seed=first_seed)
