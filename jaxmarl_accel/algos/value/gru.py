"""The GRU recurrence over whole episodes with a hand-written backward pass, for replayed
batches small enough to keep every step's gates.

Equations (flax's ``nn.GRUCell``, Cho et al. 2014 with the reset gate applied after the
hidden projection), for input projections ``g_r, g_z, g_n`` (``x W_i* + b_i*``, computed
for all steps at once outside the scan) and state ``h``:

    r = sigmoid(g_r + h W_hr)        z = sigmoid(g_z + h W_hz)
    m = h W_hn + b_hn                n = tanh(g_n + r * m)
    h' = (1 - z) * n + z * h

Why a custom VJP: differentiating the scanned cell with ``jax.grad`` accumulates each
weight's gradient inside the backward loop (one small ``[H, BN] x [BN, H]`` matmul per step
and weight) and, with rematerialization, recomputes every step. Here the forward scan
keeps the gates ``r, z, m, n`` of every step, the backward scan only carries ``dh``
through the three ``[BN, H] x [H, H]`` products, and the weights' gradients are one matmul
each over all steps afterwards. On the 2-core CPU machine, the agent network's forward and
backward over a batch of 32 MPE-spread episodes (26 rows, 3 agents, hidden 64) took
6.2-6.6 ms with it against 8.4-8.6 ms for the rematerialized autodiff scan
(``docs/results-speed.md``). It keeps about ``9 * hidden`` floats per row and agent
across the update instead of ``hidden``: :func:`~.networks.unroll` uses it only below
:data:`~.networks.SAVED_GATES_BYTES`. The forward pass is bit-identical to flax's cell;
gradients agree to float32 rounding (tests).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _cell(h: jax.Array, g_r: jax.Array, g_z: jax.Array, g_n: jax.Array, w_r: jax.Array,
          w_z: jax.Array, w_n: jax.Array, b_n: jax.Array
          ) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    """One step (module docstring): ``(h', (r, z, m, n))``, every array ``[BN, H]``."""
    r = jax.nn.sigmoid(g_r + h @ w_r)
    z = jax.nn.sigmoid(g_z + h @ w_z)
    m = h @ w_n + b_n
    n = jnp.tanh(g_n + r * m)
    return (1.0 - z) * n + z * h, (r, z, m, n)


@jax.custom_vjp
def recurrence(g_r: jax.Array, g_z: jax.Array, g_n: jax.Array, w_r: jax.Array,
               w_z: jax.Array, w_n: jax.Array, b_n: jax.Array) -> jax.Array:
    """The GRU's states over a sequence from a zero state.

    Args:
      g_r, g_z, g_n: ``[T, BN, H]`` input projections of the reset, update and candidate
        gates (biases included), axis 0 time, axis 1 the sequences (episodes x agents).
      w_r, w_z, w_n: ``[H, H]`` hidden-to-gate kernels; b_n: ``[H]`` the candidate's hidden
        bias.

    Returns:
      ``[T, BN, H]`` the state after each step.
    """
    h0 = jnp.zeros(g_r.shape[1:], g_r.dtype)

    def step(h: jax.Array, g: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        h, _ = _cell(h, *g, w_r, w_z, w_n, b_n)
        return h, h

    return jax.lax.scan(step, h0, (g_r, g_z, g_n))[1]


def _forward(g_r, g_z, g_n, w_r, w_z, w_n, b_n):
    h0 = jnp.zeros(g_r.shape[1:], g_r.dtype)

    def step(h, g):
        h, gates = _cell(h, *g, w_r, w_z, w_n, b_n)
        return h, (h, gates)

    hs, gates = jax.lax.scan(step, h0, (g_r, g_z, g_n))[1]
    return hs, (w_r, w_z, w_n, hs, gates)


def _backward(saved, d_hs):
    w_r, w_z, w_n, hs, gates = saved
    h_prev = jnp.concatenate([jnp.zeros_like(hs[:1]), hs[:-1]], axis=0)  # [T, BN, H]
    w_rt, w_zt, w_nt = w_r.T, w_z.T, w_n.T

    def step(dh, xs):
        h, (r, z, m, n), d_out = xs
        dh = dh + d_out
        d_an = dh * (1.0 - z) * (1.0 - n * n)  # through n = tanh(a_n)
        d_m = d_an * r
        d_ar = d_an * m * r * (1.0 - r)  # through r = sigmoid(a_r)
        d_az = dh * (h - n) * z * (1.0 - z)  # through z = sigmoid(a_z)
        dh_prev = dh * z + d_m @ w_nt + d_az @ w_zt + d_ar @ w_rt
        return dh_prev, (d_ar, d_az, d_an, d_m)

    _, (d_ar, d_az, d_an, d_m) = jax.lax.scan(
        step, jnp.zeros_like(hs[0]), (h_prev, gates, d_hs), reverse=True)
    rows = h_prev.reshape(-1, h_prev.shape[-1]).T  # [H, T * BN]
    flat = lambda x: x.reshape(-1, x.shape[-1])
    return (d_ar, d_az, d_an, rows @ flat(d_ar), rows @ flat(d_az), rows @ flat(d_m),
            jnp.sum(flat(d_m), axis=0))


recurrence.defvjp(_forward, _backward)


def unroll_cell(cell_params: dict, encoded: jax.Array) -> jax.Array:
    """A flax ``nn.GRUCell``'s states over ``encoded [T, BN, in]`` from a zero state
    (``cell_params``: the cell's own parameters, ``ir iz in hr hz hn``), through
    :func:`recurrence`; returns ``[T, BN, H]``."""
    p = cell_params
    g_r, g_z, g_n = (encoded @ p[k]["kernel"] + p[k]["bias"] for k in ("ir", "iz", "in"))
    return recurrence(g_r, g_z, g_n, p["hr"]["kernel"], p["hz"]["kernel"], p["hn"]["kernel"],
                      p["hn"]["bias"])


__all__ = ["recurrence", "unroll_cell"]
