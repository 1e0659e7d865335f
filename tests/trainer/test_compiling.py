"""The XLA options the training programs are compiled with
(:mod:`jaxmarl_accel.trainer.compiling`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.trainer.compiling import CPU_OPTIONS, compiler_options


def test_the_cpu_gets_level_one_without_llvms_expensive_passes(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    assert compiler_options("cpu") == {"xla_backend_optimization_level": 1,
                                       "xla_llvm_disable_expensive_passes": True}
    options = compiler_options("cpu")
    options["xla_backend_optimization_level"] = 3
    assert CPU_OPTIONS["xla_backend_optimization_level"] == 1  # a copy each call


@pytest.mark.parametrize("flags", ["--xla_backend_optimization_level=3",
                                   "--xla_llvm_disable_expensive_passes=false"])
def test_the_users_xla_flags_win(monkeypatch, flags):
    monkeypatch.setenv("XLA_FLAGS", flags)
    assert compiler_options("cpu") == {}


def test_other_platforms_get_xlas_defaults(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert compiler_options("gpu") == {} and compiler_options("tpu") == {}


def test_a_program_compiled_with_them_computes_what_the_defaults_do(monkeypatch):
    """A small recurrent scan with a matmul and a reduction: same values within float32
    rounding, and XLA accepts every option by name."""
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    w = jax.random.normal(jax.random.PRNGKey(0), (16, 16)) / 4.0
    xs = jax.random.normal(jax.random.PRNGKey(1), (32, 8, 16))

    def program(w: jax.Array, xs: jax.Array) -> jax.Array:  # xs: [T, B, 16] -> [B]
        step = lambda h, x: (jnp.tanh(h @ w + x),) * 2
        h, hs = jax.lax.scan(step, jnp.zeros(xs.shape[1:]), xs)
        return jnp.sum(hs ** 2, axis=(0, 2)) + jnp.max(h, axis=-1)

    fast = jax.jit(program, compiler_options=compiler_options("cpu")).lower(w, xs).compile()
    default = jax.jit(program).lower(w, xs).compile()
    np.testing.assert_allclose(fast(w, xs), default(w, xs), rtol=1e-5)


def _tiny_trainer():
    from jaxmarl_accel.config import TrainConfig
    from jaxmarl_accel.trainer.train import make_trainer

    return make_trainer(TrainConfig(
        env="simple_spread", env_kwargs=(("num_agents", 2),), algo="maddpg", buffer_capacity=64,
        batch_size=8, num_envs=2, total_env_steps=40, update_every=10, learning_starts=10,
        eval_every=40, eval_episodes=1))


def test_the_sharded_chunk_compiles_and_runs_with_them(monkeypatch):
    """The command line's path: ``make_sharded_trainer`` jits init and chunk with the options
    (the suite's own ``XLA_FLAGS`` would leave them out, so they are cleared here)."""
    from jaxmarl_accel.trainer.sharding import DeviceLayout, make_sharded_trainer

    monkeypatch.setenv("XLA_FLAGS", "")
    trainer = _tiny_trainer()
    sharded = make_sharded_trainer(trainer, DeviceLayout(1, 1), seeds=2,
                                   devices=jax.devices("cpu")[:1])
    compiled = sharded.run_chunk.lower(sharded.abstract_state, np.int32(0)).compile()
    state, metrics = compiled(sharded.init(jax.random.PRNGKey(0)), np.int32(0))
    assert np.asarray(state.env_steps).tolist() == [40, 40]
    assert np.all(np.isfinite(np.asarray(metrics.eval_return)))


def test_make_sharded_trainer_passes_them_to_xla(monkeypatch):
    """An option XLA does not know, given in their place, reaches XLA's compile and fails it."""
    from jaxmarl_accel.trainer import sharding

    monkeypatch.setattr(sharding, "compiler_options", lambda platform: {"xla_no_such": 1})
    trainer = _tiny_trainer()
    sharded = sharding.make_sharded_trainer(trainer, sharding.DeviceLayout(1, 1), seeds=2,
                                            devices=jax.devices("cpu")[:1])
    with pytest.raises(Exception, match="xla_no_such"):
        sharded.run_chunk.lower(sharded.abstract_state, np.int32(0)).compile()


def test_the_suite_adds_only_the_flags_its_jaxlib_knows():
    """``tests/conftest.py`` probes its own flags in a child process before adding them: an
    unknown one would abort every test process at its backend's start."""
    from tests.conftest import _known_to_xla

    assert _known_to_xla("--xla_backend_optimization_level=1")
    assert not _known_to_xla("--xla_no_such_flag_here=true")

