"""The per-agent maths of the actor-critic learners, as small module-level pure functions.

Shapes: B batch, N agents, C critics of one agent, A action-vector width. ``obs`` and
``action`` of a batch are ``[B, N, obs_dim]`` and ``[B, N, A]``; one agent's critic
parameters have leaves ``[C, ...]``. References: Lowe et al. 2017 (MADDPG, Alg. 1); paper
001 (its eq. 1 actor gradient, eq. 2 critic regression); Fujimoto et al. 2018 (TD3);
Haarnoja et al. 2018a/b (SAC eq. 3 soft value, eq. 12 actor, eq. 18 temperature).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from jaxmarl_accel.algos import networks
from jaxmarl_accel.algos.distributions import ActionDistribution

PyTree = Any


def make_optimizer(lr: float, clip: float | None) -> optax.GradientTransformation:
    """Adam at ``lr``, after clipping the global gradient norm at ``clip`` (if not None)."""
    if clip is None:
        return optax.adam(lr)
    return optax.chain(optax.clip_by_global_norm(clip), optax.adam(lr))


def flat_init(tx: optax.GradientTransformation, params: PyTree) -> PyTree:
    """Optimizer state of ``params`` raveled into one vector (see :func:`flat_step`)."""
    return tx.init(ravel_pytree(params)[0])


def flat_step(
    tx: optax.GradientTransformation, grads: PyTree, opt_state: PyTree, params: PyTree
) -> tuple[PyTree, PyTree]:
    """One optimizer step on the parameters raveled into one vector.

    Same arithmetic as on the pytree (Adam is elementwise, the clip uses the global norm)
    but a handful of fused kernels instead of a few per leaf: faster to compile.
    """
    flat, unravel = ravel_pytree(params)
    updates, opt_state = tx.update(ravel_pytree(grads)[0], opt_state, flat)
    return unravel(flat + updates), opt_state


def critic_target(
    critic_mlp: networks.MLP, target_critic: PyTree, next_obs: jax.Array,
    next_action: jax.Array, reward: jax.Array, done: jax.Array, bonus: jax.Array,
    alpha: jax.Array, gamma: float,
) -> jax.Array:
    """Agent i's critic target ``y_i``, ``[B]`` (paper 001 eq. 2, with TD3's clipped double-Q
    and SAC's soft value, eq. 3)::

        y_i = r_i + gamma (1 - d_i) (min_c Q'_{i,c}(x', a') + alpha_i H_i(o'_i))

    Args:
      critic_mlp: the critic module.
      target_critic: agent i's target critics, leaves ``[C, ...]``.
      next_obs: ``[B, N, obs_dim]``; next_action: every agent's next action ``[B, N, A]``.
      reward, done: agent i's ``[B]``; bonus: its entropy bonus at ``o'_i``, ``[B]``.
      alpha: ``[]`` its entropy coefficient (0 without the entropy term).
      gamma: discount.
    """
    x_next = networks.critic_input(next_obs, next_action)
    q_next = jnp.min(networks.apply_critics(critic_mlp, target_critic, x_next), axis=0)
    soft_next = q_next + alpha * bonus
    return reward + gamma * (1.0 - done) * soft_next


def critic_loss(
    critic: PyTree, critic_mlp: networks.MLP, obs: jax.Array, action: jax.Array,
    weights: jax.Array, y: jax.Array,
) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """Importance-weighted regression of agent i's C critics on ``y`` (paper 001 eq. 2)::

        L(phi_i) = mean_b w_b sum_c (Q_{i,c}(x_b, a_b) - y_b)^2

    Args:
      critic: agent i's critics, leaves ``[C, ...]`` (differentiated).
      obs, action: the replayed ``[B, N, obs_dim]`` and ``[B, N, A]``.
      weights: ``[B]`` importance weights; y: ``[B]`` targets.

    Returns:
      ``(loss [], (td [B] = mean_c |Q_c - y|, mean Q []))``.
    """
    q = networks.apply_critics(critic_mlp, critic, networks.critic_input(obs, action))
    loss = jnp.mean(weights * jnp.sum((q - y) ** 2, axis=0))
    return loss, (jnp.mean(jnp.abs(q - y), axis=0), jnp.mean(q))


def actor_loss(
    actor: PyTree, actor_mlp: networks.MLP, critic_mlp: networks.MLP,
    dist: ActionDistribution, index: jax.Array, mask: jax.Array, critics: PyTree,
    obs: jax.Array, action: jax.Array, key: jax.Array, alpha: jax.Array, actor_reg: float,
) -> tuple[jax.Array, jax.Array]:
    """Agent i's actor loss through its relaxed own action (paper 001 eq. 1; SAC eq. 12)::

        J(theta_i) = -mean_b min_c Q_{i,c}(x, a_1.., mu_i(o_i), ..a_N) - alpha_i H_i
                     + reg * mean(out^2)

    with the other agents' actions taken from the replay.

    Args:
      actor: agent i's actor parameters (differentiated).
      actor_mlp, critic_mlp, dist: the networks and the action distribution.
      index: ``[]`` int, i; mask: ``[A]`` bool valid actions of agent i.
      critics: the critics the actor ascends, leaves ``[C', ...]`` (MADDPG / MATD3: the
        first; MASAC: both, with the minimum taken).
      obs, action: the replayed ``[B, N, obs_dim]`` and ``[B, N, A]``.
      key: drives the sampled own action; alpha: ``[]`` entropy coefficient (0: none).
      actor_reg: weight of the squared pre-activation outputs.

    Returns:
      ``(loss [], mean entropy bonus [])``.
    """
    num_agents = obs.shape[1]
    out = actor_mlp.apply(actor, jnp.take(obs, index, axis=1))
    own_action, bonus = dist.sample(out, mask, key)
    select = jax.nn.one_hot(index, num_agents)[None, :, None]
    joint = action * (1.0 - select) + own_action[:, None, :] * select
    q = networks.apply_critics(critic_mlp, critics, networks.critic_input(obs, joint))
    q = jnp.min(q, axis=0)
    loss = -jnp.mean(q) - alpha * jnp.mean(bonus)
    loss = loss + actor_reg * dist.reg(out, mask)
    return loss, jnp.mean(bonus)


def fixed_temperature(
    alpha_tx: optax.GradientTransformation, log_alpha: jax.Array, alpha_opt: PyTree,
    entropy: jax.Array, target_entropy: jax.Array,
) -> tuple[jax.Array, PyTree]:
    """The entropy coefficient stays as it is: ``(log_alpha, alpha_opt)`` unchanged."""
    del alpha_tx, entropy, target_entropy
    return log_alpha, alpha_opt


def sac_temperature_step(
    alpha_tx: optax.GradientTransformation, log_alpha: jax.Array, alpha_opt: PyTree,
    entropy: jax.Array, target_entropy: jax.Array,
) -> tuple[jax.Array, PyTree]:
    """One step of SAC's temperature loss (Haarnoja et al. 2018b, eq. 18) on ``log alpha``,
    with ``E[-log pi] = H`` the mean entropy bonus ``entropy`` ``[]``."""
    grad = jax.lax.stop_gradient(entropy - target_entropy)
    updates, alpha_opt = alpha_tx.update(grad, alpha_opt, log_alpha)
    return optax.apply_updates(log_alpha, updates), alpha_opt
