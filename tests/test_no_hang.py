"""Value learners never hang under the seed ``vmap`` on a 2-core CPU.

Batched LAPACK work (the QR of an orthogonal initializer) under ``jax.vmap`` deadlocked
XLA's CPU intra-op pool on 2-core machines: ``jax.jit(jax.vmap(init))`` over 2 or more
seeds never returned (:mod:`jaxmarl_accel.algos.initializers`). The programs run in a
subprocess under a timeout, so a regression fails here instead of stalling the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent("""
    import jax, jax.numpy as jnp
    from jaxmarl_accel.config import TrainConfig
    from jaxmarl_accel.trainer.train import make_trainer

    # QMIX's recurrent agent is the one every value learner (VDN, IQL, MAC-PO, AccMER) uses
    config = TrainConfig(**{"env": "stag_hunt", "algo": "qmix",
                            "env_kwargs": (("num_agents", 2), ("num_stags", 1),
                                           ("grid_size", 4), ("episode_length", 5)),
                            "buffer_capacity": 8, "batch_size": 2, "num_envs": 2,
                            "total_env_steps": 20, "eval_every": 20, "eval_episodes": 2})
    trainer = make_trainer(config)
    init = jax.jit(jax.vmap(trainer.init))
    chunk = jax.jit(jax.vmap(trainer.run_chunk, in_axes=(0, None)))
    for seeds in (2, 4):
        for attempt in range(3):
            keys = jax.random.split(jax.random.PRNGKey(attempt), seeds)
            state, metrics = chunk(init(keys), jnp.int32(0))
            jax.block_until_ready(metrics)
        print("ran", seeds, flush=True)
""")


@pytest.mark.slow
def test_value_learners_init_and_train_over_seeds_without_hanging():
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    try:
        done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                              timeout=420, env=env)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"value learners hung under the seed vmap: {error.stdout!r}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ran", "2", "ran", "4"]


@pytest.mark.parametrize("algo", ["qmix", "macpo", "maddpg", "masac"])
def test_seed_vmapped_programs_call_no_lapack_kernel(algo):
    """By construction: neither init nor a chunk of any learner family lowers to a LAPACK
    custom call (what deadlocked) when vmapped over seeds."""
    import jax
    import jax.numpy as jnp

    from jaxmarl_accel.config import TrainConfig
    from jaxmarl_accel.trainer.train import make_trainer

    if algo in ("qmix", "macpo"):
        config = TrainConfig(**{"env": "stag_hunt", "algo": algo,
                                "env_kwargs": (("num_agents", 2), ("num_stags", 1),
                                               ("grid_size", 4), ("episode_length", 5)),
                                "buffer_capacity": 8, "batch_size": 2, "num_envs": 2,
                                "total_env_steps": 20, "eval_every": 20, "eval_episodes": 2})
    else:
        config = TrainConfig(algo=algo, buffer_capacity=64, batch_size=8, num_envs=2,
                             total_env_steps=20, update_every=4, learning_starts=0,
                             eval_every=20, eval_episodes=2)
    trainer = make_trainer(config)
    keys = jax.random.split(jax.random.key(0), 2)
    abstract = jax.eval_shape(jax.vmap(trainer.init), keys)
    texts = [jax.jit(jax.vmap(trainer.init)).lower(keys).as_text(),
             jax.jit(jax.vmap(trainer.run_chunk, in_axes=(0, None))).lower(
                 abstract, jnp.int32(0)).as_text()]
    assert not any("lapack" in text.lower() for text in texts)
