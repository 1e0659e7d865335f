"""The per-agent maths of the actor-critic learners, as small module-level pure functions.

Shapes: B batch, N agents, C critics of one agent, A action-vector width. ``obs`` and
``action`` of a batch are ``[B, N, obs_dim]`` and ``[B, N, A]``; one agent's critic
parameters have leaves ``[C, ...]``. References: Lowe et al. 2017 (MADDPG, Alg. 1); paper
001 (its eq. 1 actor gradient, eq. 2 critic regression); Fujimoto et al. 2018 (TD3);
Haarnoja et al. 2018a/b (SAC eq. 3 soft value, eq. 12 actor, eq. 18 temperature).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from jaxmarl_accel.algos import networks
from jaxmarl_accel.algos.distributions import ActionDistribution
from jaxmarl_accel.types import PyTree


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
    return bootstrap_target(critic_mlp, target_critic, networks.critic_input(next_obs, next_action),
                            reward, done, bonus, alpha, gamma)


def bootstrap_target(
    critic_mlp: networks.MLP, target_critic: PyTree, x_next: jax.Array, reward: jax.Array,
    done: jax.Array, bonus: jax.Array, alpha: jax.Array, gamma: float,
) -> jax.Array:
    """:func:`critic_target` from the critics' next input ``x_next [B, in]``, whatever it is
    made of (the joint input, or a neighbourhood's, :mod:`~.local_critic`): ``[B]``."""
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
    return critic_regression(critic, critic_mlp, networks.critic_input(obs, action), weights, y)


def critic_regression(
    critic: PyTree, critic_mlp: networks.MLP, x: jax.Array, weights: jax.Array, y: jax.Array,
) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """:func:`critic_loss` on the critics' input ``x [B, in]``, whatever it is made of (the
    joint input, or a neighbourhood's, :mod:`~.local_critic`); same returns."""
    q = networks.apply_critics(critic_mlp, critic, x)
    loss = jnp.mean(weights * jnp.sum((q - y) ** 2, axis=0))
    return loss, (jnp.mean(jnp.abs(q - y), axis=0), jnp.mean(q))


def joint_q_full(
    critic_mlp: networks.MLP, critics: PyTree, obs: jax.Array, action: jax.Array,
    index: jax.Array, own_action: jax.Array,
) -> jax.Array:
    """Agent i's critics at the replayed joint action with ``a_i`` replaced by ``own_action``,
    through the whole network on the rebuilt joint input ``[B, N (obs_dim + A)]``.

    Args:
      critic_mlp: the critic module.
      critics: agent i's critics, leaves ``[C', ...]``.
      obs, action: the replayed ``[B, N, obs_dim]`` and ``[B, N, A]``.
      index: ``[]`` int, i; own_action: ``[B, A]``.

    Returns:
      ``[C', B]`` Q-values.
    """
    select = jax.nn.one_hot(index, obs.shape[1])[None, :, None]
    joint = action * (1.0 - select) + own_action[:, None, :] * select
    return networks.apply_critics(critic_mlp, critics, networks.critic_input(obs, joint))


def joint_q_linear(
    critic_mlp: networks.MLP, critics: PyTree, obs: jax.Array, action: jax.Array,
    index: jax.Array, own_action: jax.Array,
) -> jax.Array:
    """:func:`joint_q_full` from the first-layer pre-activations of the replayed input.

    The critic's first layer is linear in its input ``x = [o_1..o_N, a_1..a_N]``, so with
    ``W_a`` the rows of its kernel that multiply ``a_i`` (columns ``N obs_dim + i A`` to
    ``N obs_dim + (i + 1) A`` of ``x``)::

        W x[a_i <- mu_i] + b = (W x + b) + W_a^T (mu_i - a_i)

    is exact in real arithmetic (float32 rounds differently: about 1e-7 relative). The
    product ``W x`` over the replayed input is shared (no per-agent copy of the joint input
    is built) and receives no gradient; the actor's gradient flows through the ``[B, A]``
    correction only. The replayed ``a_i`` cancels up to that rounding.

    Args and Returns: as :func:`joint_q_full`.
    """
    num_agents, obs_dim = obs.shape[1:]
    width = action.shape[-1]
    kernel = networks.dense_layers(critics)[0]["kernel"]  # [C', N (obs_dim + A), H_1]
    rows = jax.lax.dynamic_slice_in_dim(kernel, num_agents * obs_dim + index * width, width,
                                        axis=1)  # [C', A, H_1]: the rows of a_i
    pre = networks.critics_first_layer(critics, networks.critic_input(obs, action))
    delta = own_action - jnp.take(action, index, axis=1)  # [B, A]
    pre = pre + jnp.einsum("ba,cah->bch", delta, rows)  # [B, C', H_1]
    return networks.critics_after_first_layer(critics, pre)


JOINT_Q = {"linear": joint_q_linear, "full": joint_q_full}
"""The two ways of evaluating the actor's critics, by ``ActorCriticConfig.actor_step``."""


def actor_loss(
    actor: PyTree, actor_mlp: networks.MLP, critic_mlp: networks.MLP,
    dist: ActionDistribution, index: jax.Array, mask: jax.Array, critics: PyTree,
    obs: jax.Array, action: jax.Array, key: jax.Array, alpha: jax.Array, actor_reg: float,
    joint_q: Callable[..., jax.Array],
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
      joint_q: how ``Q_{i,c}`` is evaluated at the joint action with ``a_i`` replaced:
        :func:`joint_q_linear` or :func:`joint_q_full` (:data:`JOINT_Q`).

    Returns:
      ``(loss [], mean entropy bonus [])``.
    """
    out = actor_mlp.apply(actor, jnp.take(obs, index, axis=1))
    own_action, bonus = dist.sample(out, mask, key)
    q = jnp.min(joint_q(critic_mlp, critics, obs, action, index, own_action), axis=0)
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
