"""A compiled chunk's temporaries do not grow with the replay's capacity, for every round.

Control flow that differs per seed under the seed ``vmap`` (a ``while_loop`` until a seed's
own step count, a ``cond`` on a seed's own readiness) becomes a ``select`` of its whole
carry, the replay included: a copy of the replay per round, visible as temporaries that
grow with the capacity in the compiled program's memory analysis.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pytest

from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.trainer.train import make_trainer

SEEDS = 2


def chunk_bytes(config: TrainConfig) -> tuple[int, int]:
    """``(replay bytes of all seeds, temporaries)`` of the seed-vmapped, donated chunk."""
    trainer = make_trainer(config)
    abstract = jax.eval_shape(jax.vmap(trainer.init), jax.random.split(jax.random.key(0), SEEDS))
    chunk = jax.jit(jax.vmap(trainer.run_chunk, in_axes=(0, None)), donate_argnums=0)
    analysis = chunk.lower(abstract, jnp.int32(0)).compile().memory_analysis()
    replay = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(abstract.buffer))
    return replay, analysis.temp_size_in_bytes


CONFIGS = {
    "episode": TrainConfig(**{"env": "stag_hunt", "algo": "qmix",
                              "env_kwargs": (("num_agents", 2), ("num_stags", 1),
                                             ("grid_size", 4), ("episode_length", 6)),
                              "buffer_capacity": 2000, "batch_size": 4, "num_envs": 2,
                              "total_env_steps": 48, "eval_every": 24, "eval_episodes": 2}),
    "transition": TrainConfig(env="simple_spread", algo="maddpg", buffer_capacity=20_000,
                              batch_size=16, num_envs=2, total_env_steps=40, update_every=4,
                              learning_starts=0, eval_every=20, eval_episodes=2),
}
CONFIGS["episode, 3 updates a round"] = dataclasses.replace(
    CONFIGS["episode"], buffer_capacity=4000, episode_updates=3)  # 4x its temporaries


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_chunk_temporaries_do_not_grow_with_the_replay(kind):
    config = CONFIGS[kind]
    replay, temp = chunk_bytes(config)
    replay2, temp2 = chunk_bytes(dataclasses.replace(config,
                                                     buffer_capacity=2 * config.buffer_capacity))
    assert replay2 >= 1.9 * replay and replay > 4 * temp  # a copy of it would show
    assert abs(temp2 - temp) <= 0.05 * temp + 65_536, (replay, temp, replay2, temp2)
