"""A replay sampler defined outside the package: one that favours recent experience.

Each of the B slots of a batch is drawn by its age: with ``u`` uniform in ``[0, 1)`` and
``size`` written slots, the age is ``floor(size * u ** recency)`` (age 0 is the newest
slot), so ``recency=1`` is uniform replay and a larger ``recency`` leans towards the
newest transitions (the density of an age fraction ``x`` is ``x ** (1 / recency - 1) /
recency``). The importance weights are ones: the bias towards recent data is the point.
The sampler also counts the updates it has seen in its own state, which shows that a run
really drew with it.

No file of the package changes: the sampler is a :class:`jaxmarl_accel.buffers.SamplerKit`
(its state, what it does after an ``add``, how it draws, what it does with priorities),
put into a buffer by :func:`jaxmarl_accel.buffers.assemble`; its buffer factory's keyword
options (here ``recency``) are the sampler's options (``--sampler-kwargs``), and
:data:`SPEC` is its record. Three ways to use it::

    python examples/custom_sampler.py    # registers it, trains MATD3 with it via make_train
    jaxmarl-accel run --sampler examples.custom_sampler:SPEC --sampler-kwargs recency=3 \\
        --algo matd3 --out runs/recent
    jaxmarl-accel run --resume runs/recent

``--sampler examples.custom_sampler:make_recent_buffer`` (the bare factory) works too. The
reference is stored in the run's ``config.json``, so ``--resume`` loads it again.
Shapes: ``C`` capacity, ``B`` batch, ``E`` transitions per ``add``.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

import jaxmarl_accel as jm
from jaxmarl_accel import buffers
from jaxmarl_accel.buffers import BufferState, SampleBatch, SamplerKit, StorageLayout, storage


@struct.dataclass
class RecentState:
    """The sampler's own state (one per seed).

    Attributes:
      updates: int32 ``[]``, the updates (calls of ``update_priorities``) seen so far.
    """

    updates: jax.Array


def recent_indices(state: BufferState, key: jax.Array, batch_size: int,
                   recency: float) -> jax.Array:
    """B slots drawn by age, int32 ``[B]``: age ``floor(size * u ** recency)`` counted back
    from the newest slot ``write_pos - 1`` (written slots are ``[0, size)``, and the ring
    wraps: the slot of age a is ``(write_pos - 1 - a) mod C``)."""
    capacity = jax.tree.leaves(state.experience)[0].shape[0]
    size = jnp.maximum(state.size, 1)
    u = jax.random.uniform(key, (batch_size,))
    age = jnp.minimum(jnp.floor(size * u ** recency).astype(jnp.int32), size - 1)
    return (state.write_pos - 1 - age) % capacity  # newest slot minus the age, on the ring


def make_recent(*, capacity: int, batch_size: int, layout: StorageLayout,
                recency: float) -> SamplerKit:
    """The sampler half: draws by :func:`recent_indices`, weights ones, counts updates."""
    del capacity

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        indices = recent_indices(state, key, batch_size, recency)
        experience = storage.gather(state.experience, indices, layout)
        return SampleBatch(experience, indices, jnp.ones((batch_size,), jnp.float32))

    def update(state: BufferState, slots: jax.Array, priorities: jax.Array) -> RecentState:
        del slots, priorities  # recency ignores priorities
        return RecentState(updates=state.sampler.updates + 1)

    return SamplerKit(init=lambda: RecentState(updates=jnp.zeros((), jnp.int32)),
                      on_add=buffers.no_add, sample=sample, update=update)


def make_recent_buffer(*, capacity: int, batch_size: int, layout: str = "transition_major",
                       index_sharing: str = "shared", recency: float = 2.0) -> buffers.Buffer:
    """The recent-experience replay (a buffer factory: the ``make`` of :data:`SPEC`).

    Args:
      capacity, batch_size, layout, index_sharing: as every sampler's
        (:func:`jaxmarl_accel.buffers.check_common` checks them).
      recency: ``>= 1``; 1 is uniform, larger leans towards the newest slots.

    Returns:
      The :class:`jaxmarl_accel.buffers.Buffer`. A one-line ValueError for a bad argument.
    """
    common = buffers.check_common(capacity, batch_size, layout, index_sharing)
    if isinstance(recency, bool) or not isinstance(recency, int | float) or recency < 1:
        raise ValueError(f"recency must be a number >= 1, got {recency!r}")
    kit = make_recent(recency=float(recency), **common)
    return buffers.assemble(kit, index_sharing=index_sharing, min_size=batch_size,
                            reduction="max", **common)


SPEC = buffers.SamplerSpec(
    name="recent", make=make_recent_buffer, prioritized=False,
    summary="favours recent experience: age floor(size * u ** recency)")
"""The sampler's record: ``register_sampler(SPEC)`` makes it ``--sampler recent``, and
``--sampler examples.custom_sampler:SPEC`` names it from the command line."""


def main() -> None:
    """Register the sampler and train MATD3 on 3-agent spread with it through ``make_train``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="env steps")
    parser.add_argument("--seeds", type=int, default=2, help="seeds trained at once")
    parser.add_argument("--recency", type=float, default=2.0, help="the sampler's recency")
    args = parser.parse_args()
    buffers.register_sampler(SPEC, replace=True)
    config = jm.TrainConfig(algo="matd3", sampler="recent",
                            sampler_kwargs=(("recency", args.recency),), num_envs=8,
                            update_every=8, batch_size=256, buffer_capacity=10_000,
                            learning_starts=min(1_000, args.steps // 4),
                            eval_every=args.steps // 4,
                            total_env_steps=args.steps, eval_episodes=4)
    state, metrics = jax.jit(jax.vmap(jm.make_train(config)))(
        jax.random.split(jax.random.PRNGKey(0), args.seeds))
    final = np.asarray(metrics.eval_return)[:, -1].sum(-1)
    print("updates the sampler saw per seed:", np.asarray(state.buffer.sampler.updates))
    print("final evaluation return per seed:", np.round(final, 2))


if __name__ == "__main__":
    main()
