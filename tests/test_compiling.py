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
