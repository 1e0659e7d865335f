"""The local-critic learner's update (critic regression, actor ascent, soft targets per
group; paper 001 eqs. 1-2, Alg. 1) and :func:`build`, which binds it to the skeleton of
:mod:`~jaxmarl_accel.algos.actor_critic.learner` (its state:
:mod:`~jaxmarl_accel.algos.actor_critic.state`). Shapes: B joint steps, N agents, G groups,
P samples of one group, C critics."""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from jaxmarl_accel.algos import networks
from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.algos.actor_critic.learner import (
    bind_learner,
    finish_update,
    held_actor_step,
    update_metrics,
)
from jaxmarl_accel.algos.actor_critic.local_critic.critics import ObserveAt, critic_features
from jaxmarl_accel.algos.actor_critic.local_critic.groups import (
    Block,
    Skeleton,
    act,
    block_params,
    init,
    make_skeleton,
)
from jaxmarl_accel.algos.actor_critic.local_critic.observe import Samples, samples
from jaxmarl_accel.algos.actor_critic.state import ActorCriticState, ActorInfo, CriticInfo
from jaxmarl_accel.algos.actor_critic.variant import Variant
from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import PyTree, Transition


class Group(NamedTuple):
    """One group's slice of :class:`ActorCriticState` (leaves without the group axis)."""

    actor: PyTree
    critic: PyTree
    target_critic: PyTree
    actor_opt: PyTree
    critic_opt: PyTree
    log_alpha: jax.Array
    alpha_opt: PyTree
    target_entropy: jax.Array


def _groups_of(sk: Skeleton, state: ActorCriticState, block: Block) -> Group:
    cut = lambda tree: block_params(tree, block)
    return Group(cut(state.actor), cut(state.critic), cut(state.target_critic),
                 cut(state.actor_opt), cut(state.critic_opt), cut(state.log_alpha),
                 cut(state.alpha_opt), cut(sk.target_entropy))


def _critic_loss(critic: PyTree, sk: Skeleton, s: Samples, y: jax.Array):
    x = critic_features(sk.config.critic, s.obs, s.action, s.neighbour_action, s.neighbour_obs)
    return losses.critic_regression(critic, sk.critic_mlp, x, s.weight, y)


def _actor_loss(actor: PyTree, sk: Skeleton, critics: PyTree, s: Samples, key: jax.Array,
                alpha: jax.Array):
    out = sk.actor_mlp.apply(actor, s.obs)
    mask = sk.mask[s.agents]
    own, bonus = sk.dist.sample(out, mask, key)
    x = critic_features(sk.config.critic, s.obs, own, s.neighbour_action, s.neighbour_obs)
    q = jnp.min(networks.apply_critics(sk.critic_mlp, critics, x), axis=0)
    loss = -jnp.mean(q) - alpha * jnp.mean(bonus) + sk.config.actor_reg * sk.dist.reg(out, mask)
    return loss, jnp.mean(bonus)


def group_target(sk: Skeleton, group: Group, s: Samples) -> jax.Array:
    """One group's critic targets ``y [P]`` (paper 001 eq. 2 with the variant's entropy
    term; ``s`` leaves ``[P, ...]``)."""
    x = critic_features(sk.config.critic, s.next_obs, s.next_action, s.next_neighbour_action,
                        s.next_neighbour_obs)
    return losses.bootstrap_target(sk.critic_mlp, group.target_critic, x, s.reward, s.done,
                                   s.next_bonus, sk.variant.alpha(group.log_alpha),
                                   sk.config.gamma)


def group_critic_step(sk: Skeleton, group: Group, s: Samples, y: jax.Array
                      ) -> tuple[Group, CriticInfo]:
    """One optimizer step of a group's critics on its P samples."""
    (loss, (td, q_mean)), grad = jax.value_and_grad(_critic_loss, has_aux=True)(
        group.critic, sk, s, y)
    critic, opt = losses.flat_step(sk.critic_tx, grad, group.critic_opt, group.critic)
    return group._replace(critic=critic, critic_opt=opt), CriticInfo(loss, td, q_mean)


def group_actor_step(sk: Skeleton, group: Group, s: Samples, key: jax.Array
                     ) -> tuple[Group, ActorInfo]:
    """One optimizer step of a group's actor on its P samples, then its temperature step."""
    (loss, entropy), grad = jax.value_and_grad(_actor_loss, has_aux=True)(
        group.actor, sk, sk.variant.actor_critics(group.critic), s, key,
        sk.variant.alpha(group.log_alpha))
    actor, opt = losses.flat_step(sk.actor_tx, grad, group.actor_opt, group.actor)
    log_alpha, alpha_opt = sk.variant.temperature(
        sk.alpha_tx, group.log_alpha, group.alpha_opt, entropy, group.target_entropy)
    return (group._replace(actor=actor, actor_opt=opt, log_alpha=log_alpha, alpha_opt=alpha_opt),
            ActorInfo(loss, entropy))


def _put(state: ActorCriticState, block: Block, group: Group) -> ActorCriticState:
    stop = block.first + block.agents.shape[0]
    put = lambda full, part: jax.tree.map(lambda f, p: f.at[block.first:stop].set(p), full, part)
    return state.replace(
        actor=put(state.actor, group.actor), critic=put(state.critic, group.critic),
        actor_opt=put(state.actor_opt, group.actor_opt),
        critic_opt=put(state.critic_opt, group.critic_opt),
        log_alpha=put(state.log_alpha, group.log_alpha),
        alpha_opt=put(state.alpha_opt, group.alpha_opt))


def _check_batch(sk: Skeleton, batch: Transition, weights: jax.Array | None) -> None:
    if batch.reward.ndim != 2:
        raise ValueError(f"critic {sk.config.critic!r} learns from one batch for all agents "
                         "(leaves [B, N, ...]); per-agent batches need --critic joint")
    bsz, n = batch.reward.shape
    width = sk.spec.obs_dim if sk.observe_at is None else sk.spec.physical_state_dim
    chex.assert_shape([batch.obs, batch.next_obs], (bsz, n, width))
    chex.assert_shape(batch.action, (bsz, n, sk.dist.action_dim))
    if weights is not None:
        chex.assert_shape(weights, (bsz,))


def _priorities(sk: Skeleton, blocks: list[Samples], td: list[jax.Array], bsz: int
                ) -> jax.Array:
    """TD errors ``[B, N]`` for the replay: each sample's at its (row, agent); with pairs,
    every agent of a row gets the mean of the row's samples."""
    n = sk.spec.num_agents
    if sk.config.shared_batch == "pairs":  # every block's samples are rows 0 .. B - 1
        rows = jnp.mean(jnp.stack([jnp.mean(t, axis=0) for t in td]), axis=0)
        return jnp.broadcast_to(rows[:, None], (bsz, n))
    out = jnp.zeros((bsz, n), jnp.float32)
    for s, t in zip(blocks, td, strict=True):
        out = out.at[s.rows, s.agents].set(t)
    return out


def update(sk: Skeleton, state: ActorCriticState, batch: Transition, weights: jax.Array,
           key: jax.Array) -> tuple[ActorCriticState, dict[str, jax.Array], jax.Array]:
    """One update of every group (see :attr:`Algo.update`): critic targets and steps, then
    actor steps (on the updates the variant's actor schedule makes due; MATD3: every
    ``policy_delay``), then soft target updates."""
    _check_batch(sk, batch, weights)
    sample_key, actor_key = jax.random.split(key)
    blocks = samples(sk, state, batch, weights.astype(jnp.float32), sample_key)
    schedule = sk.variant.actor_schedule
    do_actor = schedule.due(state.step)
    new = state
    c_infos, a_infos = [], []
    for block, s, k in zip(sk.groups.blocks, blocks, jax.random.split(actor_key, len(blocks)),
                           strict=True):
        group = _groups_of(sk, state, block)

        def one(group: Group, s: Samples, key: jax.Array):
            y = group_target(sk, group, s)
            group, c_info = group_critic_step(sk, group, s, y)
            group, a_info = schedule.gate(
                do_actor, lambda g: group_actor_step(sk, g, s, key), held_actor_step, group)
            return group, (c_info, a_info)

        keys = jax.random.split(k, block.agents.shape[0])
        group, (c_info, a_info) = jax.vmap(one)(group, s, keys)
        new = _put(new, block, group)
        c_infos.append(c_info)
        a_infos.append(a_info)
    new = finish_update(sk, state, new, do_actor)
    cat = lambda xs: jnp.concatenate([jnp.ravel(x) for x in xs])
    c_info = CriticInfo(*(cat(parts) for parts in zip(*c_infos, strict=True)))
    a_info = ActorInfo(*(cat(parts) for parts in zip(*a_infos, strict=True)))
    metrics = update_metrics(sk, new, c_info, a_info, do_actor)
    td = _priorities(sk, blocks, [c.td for c in c_infos], batch.reward.shape[0])
    return new, metrics, td


def build(spec: EnvSpec, config: ActorCriticConfig, variant: Variant,
          observe_at: ObserveAt | None = None) -> Algo:
    """The learner of ``variant`` with critics of ``config.critic`` and parameters shared as
    ``config.sharing`` says; with ``observe_at`` its ``update`` takes batches of packed
    physical states and observes the rows it reads (see the module docstring). Its update
    is not split into phases (``experiments.characterize`` times a joint learner's)."""
    return bind_learner(make_skeleton(spec, config, variant, observe_at), init, act, update)
