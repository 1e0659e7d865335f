"""The shared multi-agent particle (MPE) physics core, as pure array functions.

Every scenario is one *world* of ``E = N + L`` round entities on a 2-D plane: the ``N``
agents first (in the order of ``EnvSpec.teams``), then the ``L`` landmarks / obstacles.
Agents and entities are array axes; contact forces are array ops over the ``E(E-1)/2``
unordered pairs (small worlds) or the dense ``[E, E]`` array (large ones).

State layout (:class:`MPEState`, one environment; batch axes, if any, lead):

* ``pos``  ``[E, 2]`` float32 positions (agents ``pos[:N]``, landmarks ``pos[N:]``);
* ``vel``  ``[E, 2]`` float32 velocities (landmarks stay at zero when not movable);
* ``comm`` ``[N, dim_c]`` float32 communication state of each agent (``dim_c`` may be 0;
  silent agents hold zeros);
* ``step`` ``[]`` int32 steps taken in the current episode;
* ``goal`` ``[G]`` int32 scenario-specific indices (e.g. the goal landmark of a speaker;
  ``G = 0`` for spread and tag).

Numeric world settings (:class:`WorldParams`, a pytree, so changing a value never
recompiles): per-entity ``size`` (radius), ``mass``, ``max_speed`` (``inf`` = unbounded),
``movable``, ``collide`` and ``color`` (``[E, 3]`` RGB in ``[0, 1]``, for drawing); per-agent
``accel`` (action sensitivity); scalars ``damping`` (0.25), ``dt`` (0.1), ``contact_force``
(1e2) and ``contact_margin`` (1e-3). A renderer needs only ``state.pos``, ``params.world.size``,
``params.world.color`` and ``spec.teams`` (the first ``N`` entities are agents).

One physics step (:func:`world_step`) follows PettingZoo MPE (``mpe2``) exactly: forces are the
action force ``u`` of movable agents plus the softplus contact force between every colliding
pair, ``f_ij = contact_force * (p_i - p_j) / |p_i - p_j| * m * log(1 + exp(-(|p_i - p_j| -
r_i - r_j) / m))`` with ``m = contact_margin``; then ``p += v dt``; ``v = v (1 - damping) +
f / mass * dt``; and the speed is clipped to ``max_speed``. Intended difference: two
colliding entities at *exactly* the same position get zero contact force here, where the
references divide by zero and produce NaN.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

DAMPING = 0.25
DT = 0.1
CONTACT_FORCE = 1e2
CONTACT_MARGIN = 1e-3


@struct.dataclass
class MPEState:
    """State of one MPE world (see the module docstring for the layout)."""

    pos: jax.Array
    vel: jax.Array
    comm: jax.Array
    step: jax.Array
    goal: jax.Array


@struct.dataclass
class WorldParams:
    """Numeric physical settings of one world (see the module docstring)."""

    size: jax.Array
    mass: jax.Array
    max_speed: jax.Array
    movable: jax.Array
    collide: jax.Array
    color: jax.Array
    accel: jax.Array
    damping: jax.Array
    dt: jax.Array
    contact_force: jax.Array
    contact_margin: jax.Array


def make_world_params(
    size: np.ndarray,
    movable: np.ndarray,
    collide: np.ndarray,
    color: np.ndarray,
    accel: np.ndarray,
    mass: np.ndarray | None = None,
    max_speed: np.ndarray | None = None,
) -> WorldParams:
    """Builds :class:`WorldParams` from per-entity numpy arrays, with MPE's defaults.

    Args:
      size: ``[E]`` radii. movable, collide: ``[E]`` bools. color: ``[E, 3]`` RGB.
      accel: ``[N]`` action sensitivity of each agent (MPE's default is 5.0).
      mass: ``[E]`` masses (default 1.0). max_speed: ``[E]`` (default ``inf``, unbounded).
    """
    num_entities = len(size)
    if mass is None:
        mass = np.ones(num_entities)
    if max_speed is None:
        max_speed = np.full(num_entities, np.inf)
    f32 = jnp.float32
    return WorldParams(
        size=jnp.asarray(size, f32),
        mass=jnp.asarray(mass, f32),
        max_speed=jnp.asarray(max_speed, f32),
        movable=jnp.asarray(movable, bool),
        collide=jnp.asarray(collide, bool),
        color=jnp.asarray(color, f32),
        accel=jnp.asarray(accel, f32),
        damping=jnp.asarray(DAMPING, f32),
        dt=jnp.asarray(DT, f32),
        contact_force=jnp.asarray(CONTACT_FORCE, f32),
        contact_margin=jnp.asarray(CONTACT_MARGIN, f32),
    )


def _pairwise_xy(pos_a: jax.Array, pos_b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Coordinate differences ``pos_a[i] - pos_b[j]``, as two ``[A, B]`` arrays.

    Kept apart on purpose: a trailing axis of size 2 is several times slower on XLA:CPU.
    """
    return (pos_a[:, 0, None] - pos_b[None, :, 0]), (pos_a[:, 1, None] - pos_b[None, :, 1])


def pairwise_delta(pos_a: jax.Array, pos_b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Differences ``pos_a[i] - pos_b[j]`` ``[A, B, 2]`` and distances ``[A, B]``."""
    dx, dy = _pairwise_xy(pos_a, pos_b)
    return jnp.stack([dx, dy], axis=-1), jnp.sqrt(dx * dx + dy * dy)


# Up to this many colliding entities, contact forces are computed on the E(E-1)/2 unordered
# pairs and summed per entity with a static incidence matmul (the softplus, which dominates
# the physics on CPU, runs once per pair instead of twice); above it, on the dense [E, E]
# array, where the O(E^3) incidence matmul would cost more than it saves.
PAIRWISE_MAX_ENTITIES = 40
# Up to this many, pair differences are read with static gathers instead of a matmul.
PAIR_GATHER_MAX_ENTITIES = 6


def _softplus_penetration(dist_min: jax.Array, dist: jax.Array, margin: jax.Array) -> jax.Array:
    """``m * log(1 + exp((dist_min - dist) / m))``, overflow-free."""
    overlap = (dist_min - dist) / margin
    return (jnp.maximum(overlap, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(overlap)))) * margin


def pair_incidence(num_entities: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Static unordered pairs ``i < j`` and their signed incidence matrix.

    Returns:
      ``(first [P], second [P], incidence [E, P])`` with ``P = E(E-1)/2`` and
      ``incidence[first[p], p] = 1``, ``incidence[second[p], p] = -1``, zero elsewhere.
    """
    first, second = np.triu_indices(num_entities, k=1)
    incidence = np.zeros((num_entities, first.size), np.float32)
    incidence[first, np.arange(first.size)] = 1.0
    incidence[second, np.arange(first.size)] = -1.0
    return first, second, incidence


def _contact_forces_pairs(pos: jax.Array, world: WorldParams) -> jax.Array:
    """:func:`contact_forces` evaluated once per unordered pair (small worlds)."""
    num_entities = pos.shape[0]
    first, second, incidence = pair_incidence(num_entities)
    x, y = pos[:, 0], pos[:, 1]
    if num_entities <= PAIR_GATHER_MAX_ENTITIES:
        dx, dy = x[first] - x[second], y[first] - y[second]  # [P], p_first - p_second
    else:  # one small matmul per coordinate; exact, the weights are +-1 and 0
        dx, dy = x @ incidence, y @ incidence
    dist = jnp.sqrt(dx * dx + dy * dy)
    pair = world.collide[first] & world.collide[second] & (dist > 0)
    safe_dist = jnp.where(pair, dist, 1.0)
    penetration = _softplus_penetration(
        world.size[first] + world.size[second], dist, world.contact_margin)
    magnitude = jnp.where(pair, world.contact_force * penetration / safe_dist, 0.0)  # [P]
    # entity `first` is pushed along +d, entity `second` along -d
    force = jnp.stack([incidence @ (dx * magnitude), incidence @ (dy * magnitude)], -1)
    return force * world.movable[:, None]


def contact_forces(pos: jax.Array, world: WorldParams) -> jax.Array:
    """Sum of the softplus contact forces on every entity.

    Args:
      pos: ``[E, 2]`` positions.
      world: the world's parameters.

    Returns:
      ``[E, 2]`` contact force on each entity (zero for entities that are not movable).
    """
    num_entities = pos.shape[0]
    if 1 < num_entities <= PAIRWISE_MAX_ENTITIES:
        return _contact_forces_pairs(pos, world)
    dx, dy = _pairwise_xy(pos, pos)
    dist = jnp.sqrt(dx * dx + dy * dy)
    not_self = ~jnp.eye(num_entities, dtype=bool)
    pair = world.collide[:, None] & world.collide[None, :] & not_self & (dist > 0)
    safe_dist = jnp.where(pair, dist, 1.0)  # 0/0 never reaches the output
    dist_min = world.size[:, None] + world.size[None, :]
    penetration = _softplus_penetration(dist_min, dist, world.contact_margin)
    magnitude = jnp.where(pair, world.contact_force * penetration / safe_dist, 0.0)
    force = jnp.stack([jnp.sum(dx * magnitude, axis=1), jnp.sum(dy * magnitude, axis=1)], -1)
    return force * world.movable[:, None]


def integrate(
    pos: jax.Array, vel: jax.Array, force: jax.Array, world: WorldParams
) -> tuple[jax.Array, jax.Array]:
    """Semi-implicit MPE integration with damping and max-speed clipping.

    Args:
      pos, vel, force: ``[E, 2]``.
      world: the world's parameters.

    Returns:
      New ``(pos, vel)``, each ``[E, 2]``; entities that are not movable keep theirs.
    """
    movable = world.movable[:, None]
    new_pos = jnp.where(movable, pos + vel * world.dt, pos)
    new_vel = vel * (1.0 - world.damping) + force / world.mass[:, None] * world.dt
    speed = jnp.sqrt(jnp.sum(new_vel**2, axis=-1))
    over = speed > world.max_speed
    scale = jnp.where(over, world.max_speed / jnp.where(over, speed, 1.0), 1.0)
    new_vel = jnp.where(movable, new_vel * scale[:, None], vel)
    return new_pos, new_vel


def world_step(
    pos: jax.Array,
    vel: jax.Array,
    agent_force: jax.Array,
    world: WorldParams,
    colliders: slice | None = None,
) -> tuple[jax.Array, jax.Array]:
    """One physics step of the whole world.

    Args:
      pos, vel: ``[E, 2]``.
      agent_force: ``[N, 2]`` action force of the N agents (already scaled by accel).
      world: the world's parameters.
      colliders: static slice of the entities that may collide (e.g. ``slice(0, N)`` when
        landmarks never collide); contact forces are computed among these only, so an
        ``[C, C]`` rather than ``[E, E]`` problem. ``None``: all entities.

    Returns:
      New ``(pos, vel)``, each ``[E, 2]``.
    """
    num_agents = agent_force.shape[0]
    force = jnp.zeros_like(pos).at[:num_agents].set(
        agent_force * world.movable[:num_agents, None])
    if colliders is None:
        force = force + contact_forces(pos, world)
    else:
        sub = jax.tree.map(lambda x: x[colliders] if jnp.ndim(x) else x, world)
        force = force.at[colliders].add(contact_forces(pos[colliders], sub))
    return integrate(pos, vel, force, world)


def is_collision(
    pos_a: jax.Array, pos_b: jax.Array, size_a: jax.Array, size_b: jax.Array
) -> jax.Array:
    """Overlap of every pair (``dist < r_a + r_b``), bool ``[A, B]``.

    Args:
      pos_a: ``[A, 2]``; pos_b: ``[B, 2]``; size_a: ``[A]``; size_b: ``[B]``.
    """
    dx, dy = _pairwise_xy(pos_a, pos_b)
    return jnp.sqrt(dx * dx + dy * dy) < size_a[:, None] + size_b[None, :]


def exclude_self(pairs: jax.Array) -> jax.Array:
    """Drops the diagonal of a square pair array, keeping index order, without a gather.

    Args:
      pairs: ``[N, N, ...]`` with ``pairs[i, j]`` about agent j as seen by agent i.

    Returns:
      ``[N, N-1, ...]``: row i holds ``pairs[i, j]`` for every ``j != i`` in order.
    """
    num = pairs.shape[0]
    left = np.arange(num - 1)[None, :] < np.arange(num)[:, None]
    left = left.reshape(left.shape + (1,) * (pairs.ndim - 2))
    return jnp.where(left, pairs[:, :-1], pairs[:, 1:])


def relative_positions(pos_from: jax.Array, pos_to: jax.Array) -> jax.Array:
    """``pos_to[j] - pos_from[i]`` for every pair, ``[A, B, 2]``."""
    return pos_to[None, :, :] - pos_from[:, None, :]


def nearest_index(dist: jax.Array, k: int) -> jax.Array:
    """Indices of the ``k`` smallest entries of each row, closest first.

    Args:
      dist: ``[A, B]`` distances (set excluded pairs to ``inf``).
      k: static count, ``k <= B``.

    Returns:
      ``[A, k]`` int32 column indices.
    """
    _, idx = jax.lax.top_k(-dist, k)
    return idx


_GOLDEN = 0x9E3779B9


def _fmix32(x: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finalizer: every input bit flips each output bit with p ~ 1/2."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def uniform_positions(key: jax.Array, count: int, bound: float | jax.Array) -> jax.Array:
    """``[count, 2]`` positions uniform in ``[-bound, bound)^2``, deterministic in ``key``.

    Drawn from a counter-based hash of the key's words (two MurmurHash3 finalizer rounds,
    24-bit resolution) rather than ``jax.random.uniform``: the auto-reset draws fresh
    positions on every step of every env, and threefry made that draw the most expensive
    part of a small world's step on XLA:CPU (about half of spread-3's step time).
    """
    words = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    words = jnp.asarray(words, jnp.uint32).reshape(-1)
    seed = jnp.uint32(0)
    for i in range(words.shape[0]):
        seed = _fmix32(seed ^ words[i] ^ jnp.uint32(i * 0x7F4A7C15 & 0xFFFFFFFF))
    counter = jnp.arange(2 * count, dtype=jnp.uint32) * jnp.uint32(_GOLDEN)
    bits = _fmix32(_fmix32(counter + seed) ^ seed)
    unit = (bits >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
    return ((2.0 * unit - 1.0) * bound).reshape(count, 2)


def positions_and_goal(
    key: jax.Array, count: int, num_choices: int, num_goals: int = 1
) -> tuple[jax.Array, jax.Array]:
    """Positions and goal indices from a single :func:`uniform_positions` draw.

    The goals are read from the rows drawn after the ``count`` positions, two per row, so
    the positions do not depend on ``num_goals`` and goal ``g`` does not depend on how many
    goals follow it (one or two goals read the same single extra row).

    Args:
      key: PRNG key.
      count: number of positions ``E`` (static).
      num_choices: number of values a goal can take (static, >= 1).
      num_goals: number of goal indices ``G`` (static, >= 1).

    Returns:
      ``(pos, goal)``: ``pos`` ``[E, 2]`` float32 positions uniform in ``[-1, 1)^2`` (axis 0:
      entity; axis 1: x, y) and ``goal`` ``[G]`` int32 indices, each uniform in
      ``[0, num_choices)``.
    """
    if num_goals < 1:
        raise ValueError(f"num_goals must be >= 1, got {num_goals}")
    goal_rows = -(-num_goals // 2)  # ceil(num_goals / 2): two goals per drawn row
    draw = uniform_positions(key, count + goal_rows, 1.0)  # rows after count: the goals
    unit = 0.5 * (draw[count:].reshape(-1)[:num_goals] + 1.0)  # uniform in [0, 1)
    goal = jnp.minimum((unit * num_choices).astype(jnp.int32), num_choices - 1)
    return draw[:count], goal


def start_with_goal(key: jax.Array, num_agents: int, num_landmarks: int) -> MPEState:
    """A fresh episode: ``num_agents`` agents then ``num_landmarks`` landmarks at uniform
    positions (``pos [E, 2]``), at rest, without communication, and one goal landmark drawn
    from the same draw (:func:`positions_and_goal`)."""
    pos, goal = positions_and_goal(key, num_agents + num_landmarks, num_landmarks)
    return MPEState(pos=pos, vel=jnp.zeros_like(pos), comm=jnp.zeros((num_agents, 0)),
                    step=jnp.zeros((), jnp.int32), goal=goal)
