"""Parameter initializers that are safe to ``vmap`` over seeds on every backend.

:func:`orthogonal` draws the same distribution as ``jax.nn.initializers.orthogonal`` (a
Haar-distributed orthogonal matrix, Saxe et al. 2014), but computes the QR factorization
with plain ``jnp`` Householder reflections instead of LAPACK's ``geqrf``.

Why: on the CPU backend a LAPACK kernel under ``jax.vmap`` runs through jaxlib's
``ParallelBatchMap``, which splits the batch into tasks on XLA's intra-op thread pool and
blocks the calling pool thread until they finish. When every pool thread is such a caller
(two on a 2-core machine, e.g. two seeds' QRs scheduled at once), no thread is left to run
the queued tasks and the program never returns (seen with jax 0.10.2; flax's ``GRUCell``
initializes its recurrent kernels with ``orthogonal``, so ``jax.vmap(init)`` over two or
more seeds hung every time). Householder QR in ``jnp`` is a ``fori_loop`` of matrix-vector
products: no custom call, nothing that can wait on the pool.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp


def householder_qr(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Thin QR factorization ``a = q r`` of a tall matrix by Householder reflections.

    Args:
      a: ``[m, n]`` float matrix with ``m >= n``.

    Returns:
      ``q [m, n]`` with orthonormal columns and ``r [n, n]`` upper triangular. Signs are
      those of the reflections (as LAPACK's), so ``diag(r)`` may be negative.
    """
    m, n = a.shape
    if m < n:
        raise ValueError(f"householder_qr needs a tall matrix (m >= n), got {a.shape}")
    rows = jnp.arange(m)

    def reflect(k: jax.Array, carry: tuple[jax.Array, jax.Array]
                ) -> tuple[jax.Array, jax.Array]:
        r, q = carry  # r [m, n] being reduced, q [m, m] the product of the reflections
        x = jnp.where(rows >= k, r[:, k], 0.0)  # column k below the diagonal
        norm = jnp.sqrt(jnp.sum(x * x))
        head = x[k]
        alpha = -jnp.where(head >= 0, 1.0, -1.0) * norm  # sign chosen against cancellation
        v = x - alpha * (rows == k)
        vv = jnp.sum(v * v)
        scale = jnp.where(vv > 0, 2.0 / jnp.where(vv > 0, vv, 1.0), 0.0)
        r = r - scale * jnp.outer(v, v @ r)  # H r with H = I - 2 v v^T / v^T v
        q = q - scale * jnp.outer(q @ v, v)  # q H
        return r, q

    r, q = jax.lax.fori_loop(0, n, reflect, (a, jnp.eye(m, dtype=a.dtype)))
    return q[:, :n], jnp.triu(r[:n])


def orthogonal(scale: float = 1.0, column_axis: int = -1):
    """An initializer of (semi-)orthogonal matrices, distributed as
    ``jax.nn.initializers.orthogonal(scale, column_axis)``'s, without LAPACK (module
    docstring): safe under ``jax.vmap`` on CPU.

    Args:
      scale: multiplies the orthogonal matrix.
      column_axis: the axis of the output's columns; the other axes are flattened into
        rows.

    Returns:
      ``init(key, shape, dtype=float32) -> array of shape`` whose matrix view
      ``[prod(other axes), shape[column_axis]]`` has orthonormal rows or columns (whichever
      are fewer), times ``scale``.
    """

    def init(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer needs at least 2 dimensions, got {shape}")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        tall = (n_rows, n_cols) if n_rows >= n_cols else (n_cols, n_rows)
        a = jax.random.normal(key, tall, jnp.float32)
        q, r = householder_qr(a)
        q = q * jnp.where(jnp.diag(r) >= 0, 1.0, -1.0)  # the sign fix that makes q Haar
        if n_rows < n_cols:
            q = q.T
        q = jnp.moveaxis(q.reshape(*[d for i, d in enumerate(shape)
                                     if i != column_axis % len(shape)], n_cols),
                         -1, column_axis)
        return (scale * q).astype(dtype)

    return init


__all__ = ["householder_qr", "orthogonal"]
