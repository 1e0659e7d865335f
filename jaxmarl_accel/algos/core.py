"""The shared actor-critic skeleton of MADDPG, MATD3 and MASAC.

One update (Lowe et al. 2017, Alg. 1 lines 9-14; paper 001 Alg. 1) for every agent i:

1. centralized critic regression (paper 001 eq. 2), importance-weighted::

     y_i = r_i + gamma (1 - d_i) (min_c Q'_{i,c}(x', a'_1..a'_N) + alpha_i H_i(o'_i))
     L(phi_i) = mean_b w_b sum_c (Q_{i,c}(x, a_1..a_N) - y_i)^2

   with ``a'_j`` from the algorithm's ``next_action`` (MADDPG: target actors; MATD3: target
   actors plus smoothing noise; MASAC: current actors) and ``H`` the entropy bonus (MASAC);
2. decentralized actor step (paper 001 eq. 1) through the relaxed own action, the other
   agents' actions taken from the replay::

     J(theta_i) = -mean_b q(Q_i(x, a_1.., mu_i(o_i), ..a_N)) - alpha_i H_i + reg * mean(out^2)

   where ``q`` is the minimum over the first ``actor_critics`` critics (TD3 and MADDPG: the
   first critic only; MASAC: the min of both);
   MATD3 does this step (and step 3) only every ``policy_delay`` updates;
3. soft target updates of all agents after the loop over agents (Alg. 1 line 14).

``learners="parallel"`` runs steps 1-2 of all agents in one ``jax.vmap`` over the agent
axis; ``"sequential"`` runs them agent by agent in a ``jax.lax.scan`` whose carry holds the
stacked parameters. No agent reads another agent's new parameters within one update
(next actions come from the parameters at the start of the update, other agents' actions
from the replay), so both modes compute the same update. (The original MADDPG code also
soft-updates agent i's targets inside its loop, so later agents' critic targets see the
earlier agents' freshly moved target actors; we follow paper 001's Alg. 1 instead and move
all targets after the loop.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct
from jax.flatten_util import ravel_pytree

from jaxmarl_accel.algos import networks
from jaxmarl_accel.algos.config import AlgoConfig
from jaxmarl_accel.algos.policies import Policy, make_policy
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Transition

PyTree = Any


@struct.dataclass
class AlgoState:
    """Learner state of all N agents (every leaf has the agent axis first).

    Attributes:
      actor: online actor parameters, leaves ``[N, ...]``.
      critic: online critic parameters, leaves ``[N, C, ...]`` (C critics per agent).
      target_actor: target actor parameters, like ``actor``.
      target_critic: target critic parameters, like ``critic``.
      actor_opt: optax state of each agent's actor parameters raveled into one vector
        (stacked ``[N, ...]``); see ``_flat_step``.
      critic_opt: the same for each agent's critics (all C critics in one vector, so the
        gradient clip applies to their joint norm).
      log_alpha: ``[N]`` log entropy coefficient per agent (used by MASAC only).
      alpha_opt: optax state of ``log_alpha`` (stacked ``[N, ...]``).
      step: ``[]`` int32 number of updates done so far.
    """

    actor: PyTree
    critic: PyTree
    target_actor: PyTree
    target_critic: PyTree
    actor_opt: PyTree
    critic_opt: PyTree
    log_alpha: jax.Array
    alpha_opt: PyTree
    step: jax.Array


class Variant(NamedTuple):
    """What distinguishes one algorithm from another in the skeleton.

    Attributes:
      num_critics: critics per agent (twin critics: 2).
      policy_delay: actors and targets are updated once every this many updates.
      stochastic: continuous actions use the squashed Gaussian policy.
      entropy: the entropy bonus enters the targets and the actor loss (MASAC).
      target_from_online: next actions from the online actors instead of target actors.
      next_action: ``(policy, out [B, N, out], mask [N, A], key) -> (a' [B, N, A],
        bonus [B, N])``, the target policy applied to actor outputs at ``next_obs``.
      actor_critics: the actor ascends the min of the first this many critics (only those
        are evaluated in the actor step).
    """

    num_critics: int
    policy_delay: int
    stochastic: bool
    entropy: bool
    target_from_online: bool
    next_action: Callable[..., tuple[jax.Array, jax.Array]]
    actor_critics: int


class Algo(NamedTuple):
    """A learner as pure functions (see :func:`jaxmarl_accel.algos.make_algo`).

    Attributes:
      init: ``key -> AlgoState``.
      act: ``(state, obs [..., N, obs_dim], key, explore: bool) -> (env_action,
        action_vec [..., N, action_dim])``; ``env_action`` is ``[..., N]`` int32 (discrete)
        or ``[..., N, act_dim]`` float32 in ``[0, 1]`` (continuous). ``explore`` is static.
      update: ``(state, batch, weights, key) -> (state, metrics, td_errors)``. ``batch``
        leaves ``[B, N, ...]`` (one batch for all agents; weights ``[B]``; td_errors
        ``[B, N]``) or ``[N, B, N, ...]`` (agent i learns from ``batch[i]``; weights
        ``[N, B]``; td_errors ``[N, B]``). ``metrics`` maps names to scalars.
      action_dim: width of the critic-facing action vector.
    """

    init: Callable[[jax.Array], AlgoState]
    act: Callable[..., tuple[jax.Array, jax.Array]]
    update: Callable[..., tuple[AlgoState, dict[str, jax.Array], jax.Array]]
    action_dim: int


class _Agent(NamedTuple):
    """One agent's slice of the learner state plus its static per-agent inputs."""

    index: jax.Array
    mask: jax.Array
    target_entropy: jax.Array
    actor: PyTree
    critic: PyTree
    target_critic: PyTree
    actor_opt: PyTree
    critic_opt: PyTree
    log_alpha: jax.Array
    alpha_opt: PyTree
    key: jax.Array


class _Data(NamedTuple):
    """What one agent learns from: a batch ``[B, N, ...]``, IS weights ``[B]``, next actions
    ``[B, N, A]`` and next entropy bonus ``[B, N]``."""

    batch: Transition
    weights: jax.Array
    next_action: jax.Array
    next_bonus: jax.Array


def _optimizer(lr: float, clip: float | None) -> optax.GradientTransformation:
    if clip is None:
        return optax.adam(lr)
    return optax.chain(optax.clip_by_global_norm(clip), optax.adam(lr))


def _flat_init(tx: optax.GradientTransformation, params: PyTree) -> PyTree:
    return tx.init(ravel_pytree(params)[0])


def _flat_step(
    tx: optax.GradientTransformation, grads: PyTree, opt_state: PyTree, params: PyTree
) -> tuple[PyTree, PyTree]:
    """One optimizer step on the parameters raveled into one vector.

    Same arithmetic as on the pytree (Adam is elementwise, the clip uses the global norm)
    but a handful of fused kernels instead of a few per leaf: faster to compile.
    """
    flat, unravel = ravel_pytree(params)
    updates, opt_state = tx.update(ravel_pytree(grads)[0], opt_state, flat)
    return unravel(flat + updates), opt_state


def _target_entropy(spec: EnvSpec, config: AlgoConfig) -> jax.Array:
    if config.target_entropy is not None:
        return jnp.full((spec.num_agents,), config.target_entropy, jnp.float32)
    if spec.continuous:
        return jnp.full((spec.num_agents,), -float(spec.act_dim), jnp.float32)
    return 0.5 * jnp.log(jnp.asarray(spec.action_sizes, jnp.float32))


def build(spec: EnvSpec, config: AlgoConfig, variant: Variant) -> Algo:
    """Assemble the skeleton for one algorithm ``variant`` (static set-up in Python)."""
    n = spec.num_agents
    policy: Policy = make_policy(spec, config, variant.stochastic)
    adim = policy.action_dim
    actor_mlp = networks.MLP(config.hidden_sizes, policy.out_size)
    critic_mlp = networks.MLP(config.hidden_sizes, 1)
    critic_in = n * (spec.obs_dim + adim)
    actor_tx = _optimizer(config.actor_lr, config.grad_clip)
    critic_tx = _optimizer(config.critic_lr, config.grad_clip)
    alpha_tx = optax.adam(config.alpha_lr)
    mask = spec.action_mask if not spec.continuous else jnp.ones((n, adim), bool)
    target_entropy = _target_entropy(spec, config)

    def init(key: jax.Array) -> AlgoState:
        actor_key, critic_key = jax.random.split(key)
        actor = networks.init_actors(actor_mlp, actor_key, n, spec.obs_dim)
        critic = networks.init_critics(critic_mlp, critic_key, n, variant.num_critics, critic_in)
        log_alpha = jnp.full((n,), jnp.log(max(config.alpha, 1e-30)), jnp.float32)
        return AlgoState(
            actor=actor, critic=critic, target_actor=actor, target_critic=critic,
            actor_opt=jax.vmap(lambda p: _flat_init(actor_tx, p))(actor),
            critic_opt=jax.vmap(lambda p: _flat_init(critic_tx, p))(critic),
            log_alpha=log_alpha, alpha_opt=jax.vmap(alpha_tx.init)(log_alpha),
            step=jnp.zeros((), jnp.int32),
        )

    def act(state: AlgoState, obs: jax.Array, key: jax.Array, explore: bool):
        chex.assert_axis_dimension(obs, -2, n)
        chex.assert_axis_dimension(obs, -1, spec.obs_dim)
        out = networks.apply_actors(actor_mlp, state.actor, obs)
        if explore:
            return policy.explore(out, mask, key)
        return policy.exploit(out, mask)

    def next_actions(state: AlgoState, next_obs: jax.Array, key: jax.Array):
        params = state.actor if variant.target_from_online else state.target_actor
        out = networks.apply_actors(actor_mlp, params, next_obs)
        return variant.next_action(policy, out, mask, key)

    def alpha_of(agent: _Agent) -> jax.Array:
        return jnp.exp(agent.log_alpha) if variant.entropy else jnp.zeros(())

    def critic_loss(critic, agent: _Agent, data: _Data):
        b = data.batch
        i = agent.index
        x_next = networks.critic_input(b.next_obs, data.next_action)
        q_next = jnp.min(networks.apply_critics(critic_mlp, agent.target_critic, x_next), axis=0)
        soft_next = q_next + alpha_of(agent) * data.next_bonus[:, i]
        y = b.reward[:, i] + config.gamma * (1.0 - b.done[:, i]) * soft_next
        y = jax.lax.stop_gradient(y)
        q = networks.apply_critics(critic_mlp, critic, networks.critic_input(b.obs, b.action))
        loss = jnp.mean(data.weights * jnp.sum((q - y) ** 2, axis=0))
        return loss, (jnp.mean(jnp.abs(q - y), axis=0), jnp.mean(q))

    def actor_loss(actor, critic, agent: _Agent, data: _Data, key: jax.Array):
        b = data.batch
        own_obs = jnp.take(b.obs, agent.index, axis=1)
        out = actor_mlp.apply(actor, own_obs)
        own_action, bonus = policy.sample(out, agent.mask, key)
        select = jax.nn.one_hot(agent.index, n)[None, :, None]
        joint = b.action * (1.0 - select) + own_action[:, None, :] * select
        used = jax.tree.map(lambda x: x[: variant.actor_critics], critic)
        q = networks.apply_critics(critic_mlp, used, networks.critic_input(b.obs, joint))
        q = jnp.min(q, axis=0)
        loss = -jnp.mean(q) - alpha_of(agent) * jnp.mean(bonus)
        loss = loss + config.actor_reg * policy.reg(out, agent.mask)
        return loss, jnp.mean(bonus)

    def agent_step(agent: _Agent, data: _Data, do_actor: jax.Array):
        (c_loss, (td, q_mean)), c_grad = jax.value_and_grad(critic_loss, has_aux=True)(
            agent.critic, agent, data)
        critic, critic_opt = _flat_step(critic_tx, c_grad, agent.critic_opt, agent.critic)

        def actor_step(_):
            (a_loss, entropy), a_grad = jax.value_and_grad(actor_loss, has_aux=True)(
                agent.actor, critic, agent, data, agent.key)
            actor, actor_opt = _flat_step(actor_tx, a_grad, agent.actor_opt, agent.actor)
            log_alpha, alpha_opt = agent.log_alpha, agent.alpha_opt
            if variant.entropy and config.auto_alpha:
                # SAC's temperature loss (Haarnoja et al. 2018b, eq. 18) with E[-log pi] = H.
                g = jax.lax.stop_gradient(entropy - agent.target_entropy)
                l_upd, alpha_opt = alpha_tx.update(g, alpha_opt, log_alpha)
                log_alpha = optax.apply_updates(log_alpha, l_upd)
            return actor, actor_opt, log_alpha, alpha_opt, a_loss, entropy

        def skip(_):
            zero = jnp.zeros(())
            return agent.actor, agent.actor_opt, agent.log_alpha, agent.alpha_opt, zero, zero

        if variant.policy_delay == 1:
            actor, actor_opt, log_alpha, alpha_opt, a_loss, entropy = actor_step(None)
        else:
            actor, actor_opt, log_alpha, alpha_opt, a_loss, entropy = jax.lax.cond(
                do_actor, actor_step, skip, None)
        new = agent._replace(actor=actor, critic=critic, actor_opt=actor_opt,
                             critic_opt=critic_opt, log_alpha=log_alpha, alpha_opt=alpha_opt)
        metrics = {"critic_loss": c_loss, "actor_loss": a_loss, "q_mean": q_mean,
                   "entropy": entropy, "alpha": alpha_of(new)}
        return new, metrics, td

    def update(state: AlgoState, batch: Transition, weights: jax.Array, key: jax.Array):
        per_agent = batch.reward.ndim == 3
        lead = (n,) if per_agent else ()
        bsz = batch.reward.shape[-2]
        chex.assert_shape(batch.obs, (*lead, bsz, n, spec.obs_dim))
        chex.assert_shape(batch.next_obs, (*lead, bsz, n, spec.obs_dim))
        chex.assert_shape(batch.action, (*lead, bsz, n, adim))
        chex.assert_shape([batch.reward, batch.done], (*lead, bsz, n))
        chex.assert_shape(weights, (*lead, bsz))
        next_key, agents_key = jax.random.split(key)
        if per_agent:
            next_act, next_bonus = jax.vmap(next_actions, in_axes=(None, 0, 0))(
                state, batch.next_obs, jax.random.split(next_key, n))
        else:
            next_act, next_bonus = next_actions(state, batch.next_obs, next_key)
        data = _Data(batch, weights.astype(jnp.float32), next_act, next_bonus)
        agents = _Agent(
            index=jnp.arange(n), mask=mask, target_entropy=target_entropy,
            actor=state.actor, critic=state.critic, target_critic=state.target_critic,
            actor_opt=state.actor_opt, critic_opt=state.critic_opt,
            log_alpha=state.log_alpha, alpha_opt=state.alpha_opt,
            key=jax.random.split(agents_key, n),
        )
        do_actor = (state.step + 1) % variant.policy_delay == 0
        data_axis = 0 if per_agent else None
        if config.learners == "parallel":
            agents, metrics, td = jax.vmap(agent_step, in_axes=(0, data_axis, None))(
                agents, data, do_actor)
        else:
            def body(stacked: _Agent, i: jax.Array):
                take = lambda tree: jax.tree.map(lambda x: x[i], tree)
                agent_data = take(data) if per_agent else data
                new, m, t = agent_step(take(stacked), agent_data, do_actor)
                stacked = jax.tree.map(lambda s, v: s.at[i].set(v), stacked, new)
                return stacked, (m, t)

            agents, (metrics, td) = jax.lax.scan(body, agents, jnp.arange(n))
        target_actor = optax.incremental_update(agents.actor, state.target_actor, config.tau)
        target_critic = optax.incremental_update(agents.critic, state.target_critic, config.tau)
        if variant.policy_delay > 1:
            keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(do_actor, a, b), new, old)
            target_actor = keep(target_actor, state.target_actor)
            target_critic = keep(target_critic, state.target_critic)
        new_state = AlgoState(
            actor=agents.actor, critic=agents.critic, target_actor=target_actor,
            target_critic=target_critic, actor_opt=agents.actor_opt,
            critic_opt=agents.critic_opt, log_alpha=agents.log_alpha,
            alpha_opt=agents.alpha_opt, step=state.step + 1,
        )
        metrics = {k: jnp.mean(v) for k, v in metrics.items()}
        metrics["td_error"] = jnp.mean(td)
        metrics["actor_updated"] = do_actor.astype(jnp.float32)
        return new_state, metrics, td if per_agent else td.T

    return Algo(init=init, act=act, update=update, action_dim=adim)
