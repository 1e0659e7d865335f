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


class CriticInfo(NamedTuple):
    """What the critic step reports per agent: the weighted ``loss [N]``, ``td [N, B]``
    (``|Q_{i,c} - y_i|`` averaged over the C critics) and the mean Q value ``q_mean [N]``."""

    loss: jax.Array
    td: jax.Array
    q_mean: jax.Array


class ActorInfo(NamedTuple):
    """What the actor step reports per agent: ``loss [N]`` and ``entropy [N]`` (the mean
    entropy bonus of the sampled own actions; zero for deterministic actors)."""

    loss: jax.Array
    entropy: jax.Array


class Phases(NamedTuple):
    """The steps 1-3 of one update (module docstring), each over all N agents.

    With ``next_key, actor_key = split(key)``, ``update(state, batch, weights, key)`` is::

        y = target_q(state, batch, next_key)
        state, _ = critic_step(state, batch, weights, y)
        state, _ = actor_step(state, batch, actor_key)  # skipped on delayed steps
        state = target_update(state)  # kept back on delayed steps

    and ``step + 1``, made of the same per-agent functions, one agent's three steps in one
    pass over the agents (with sequential learners the phases' separate passes can round
    differently in the last bit). ``batch`` leaves are ``[B, N, ...]`` (one batch for all
    agents) or ``[N, B, N, ...]`` (agent i learns from ``batch[i]``), as for ``update``;
    each step maps over the agents as ``config.learners`` says.

    Attributes:
      target_q: ``(state, batch, key) -> y [N, B]``, the critic targets ``y_i`` (eq. 2)
        from the next actions of ``state``'s target (or online) actors at
        ``batch.next_obs`` and its target critics; ``key`` drives the next-action sampling.
      critic_step: ``(state, batch, weights, y [N, B]) -> (state, CriticInfo)``: one
        optimizer step of every agent's critics on the loss weighted by ``weights`` (``[B]``,
        or ``[N, B]`` for per-agent batches); updates ``critic`` and ``critic_opt``.
      actor_step: ``(state, batch, key) -> (state, ActorInfo)``: one optimizer step of
        every agent's actor through ``state.critic`` (in ``update``: the critics just
        stepped), and of its temperature (MASAC with ``auto_alpha``); updates ``actor``,
        ``actor_opt``, ``log_alpha`` and ``alpha_opt``. ``key`` is split into one per agent.
      target_update: ``state -> state`` with ``target_actor`` and ``target_critic`` moved
        towards ``actor`` and ``critic`` by ``config.tau``.
    """

    target_q: Callable[[AlgoState, Transition, jax.Array], jax.Array]
    critic_step: Callable[..., tuple[AlgoState, CriticInfo]]
    actor_step: Callable[[AlgoState, Transition, jax.Array], tuple[AlgoState, ActorInfo]]
    target_update: Callable[[AlgoState], AlgoState]


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
      phases: the steps ``update`` is composed of (:class:`Phases`), to run or time apart.
    """

    init: Callable[[jax.Array], AlgoState]
    act: Callable[..., tuple[jax.Array, jax.Array]]
    update: Callable[..., tuple[AlgoState, dict[str, jax.Array], jax.Array]]
    action_dim: int
    phases: Phases


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


class _Next(NamedTuple):
    """What one agent's targets come from: a batch ``[B, N, ...]``, the next actions
    ``[B, N, A]`` and the next entropy bonus ``[B, N]``."""

    batch: Transition
    action: jax.Array
    bonus: jax.Array


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
    """Assemble the skeleton for one algorithm ``variant`` (static set-up in Python);
    ``update`` is composed of the per-agent functions behind ``phases`` (see :class:`Phases`)."""
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

    def check_batch(batch: Transition, weights: jax.Array | None = None) -> bool:
        """Trace-time shape checks; True for per-agent batches (leaves ``[N, B, N, ...]``)."""
        per_agent = batch.reward.ndim == 3
        lead = (n,) if per_agent else ()
        bsz = batch.reward.shape[-2]
        chex.assert_shape(batch.obs, (*lead, bsz, n, spec.obs_dim))
        chex.assert_shape(batch.next_obs, (*lead, bsz, n, spec.obs_dim))
        chex.assert_shape(batch.action, (*lead, bsz, n, adim))
        chex.assert_shape([batch.reward, batch.done], (*lead, bsz, n))
        if weights is not None:
            chex.assert_shape(weights, (*lead, bsz))
        return per_agent

    def agents_of(state: AlgoState) -> _Agent:
        return _Agent(
            index=jnp.arange(n), mask=mask, target_entropy=target_entropy,
            actor=state.actor, critic=state.critic, target_critic=state.target_critic,
            actor_opt=state.actor_opt, critic_opt=state.critic_opt,
            log_alpha=state.log_alpha, alpha_opt=state.alpha_opt,
        )

    def with_agents(state: AlgoState, agents: _Agent) -> AlgoState:
        return state.replace(
            actor=agents.actor, critic=agents.critic, actor_opt=agents.actor_opt,
            critic_opt=agents.critic_opt, log_alpha=agents.log_alpha, alpha_opt=agents.alpha_opt)

    def over_agents(fn: Callable[..., tuple[_Agent, Any]], agents: _Agent, own: tuple,
                    data: tuple, per_agent: bool) -> tuple[_Agent, Any]:
        """``agent, out = fn(agent, *own, *data)`` for every agent; returns the new agents and
        the outs stacked ``[N, ...]``. ``own`` leaves have the agent axis first, ``data``
        leaves too if ``per_agent`` (else all agents share them). One ``vmap`` (parallel
        learners) or a scan whose carry holds the stacked agents (sequential)."""
        if config.learners == "parallel":
            call = lambda agent, own, data: fn(agent, *own, *data)
            return jax.vmap(call, in_axes=(0, 0, 0 if per_agent else None))(agents, own, data)

        def body(stacked: _Agent, i: jax.Array):
            take = lambda tree: jax.tree.map(lambda x: x[i], tree)
            agent, out = fn(take(stacked), *take(own), *(take(data) if per_agent else data))
            return jax.tree.map(lambda s, v: s.at[i].set(v), stacked, agent), out

        return jax.lax.scan(body, agents, jnp.arange(n))

    def next_inputs(state: AlgoState, batch: Transition, key: jax.Array, per_agent: bool):
        """Next actions of all agents at ``batch.next_obs`` (one key per agent's batch)."""
        params = state.actor if variant.target_from_online else state.target_actor
        apply = lambda obs, k: variant.next_action(
            policy, networks.apply_actors(actor_mlp, params, obs), mask, k)
        if per_agent:
            action, bonus = jax.vmap(apply)(batch.next_obs, jax.random.split(key, n))
        else:
            action, bonus = apply(batch.next_obs, key)
        return _Next(batch, action, bonus)

    def alpha_of(log_alpha: jax.Array) -> jax.Array:
        return jnp.exp(log_alpha) if variant.entropy else jnp.zeros_like(log_alpha)

    def agent_target(agent: _Agent, nxt: _Next) -> jax.Array:
        b = nxt.batch
        i = agent.index
        x_next = networks.critic_input(b.next_obs, nxt.action)
        q_next = jnp.min(networks.apply_critics(critic_mlp, agent.target_critic, x_next), axis=0)
        soft_next = q_next + alpha_of(agent.log_alpha) * nxt.bonus[:, i]
        return b.reward[:, i] + config.gamma * (1.0 - b.done[:, i]) * soft_next

    def critic_loss(critic, b: Transition, weights: jax.Array, y: jax.Array):
        q = networks.apply_critics(critic_mlp, critic, networks.critic_input(b.obs, b.action))
        loss = jnp.mean(weights * jnp.sum((q - y) ** 2, axis=0))
        return loss, (jnp.mean(jnp.abs(q - y), axis=0), jnp.mean(q))

    def actor_loss(actor, agent: _Agent, b: Transition, key: jax.Array):
        own_obs = jnp.take(b.obs, agent.index, axis=1)
        out = actor_mlp.apply(actor, own_obs)
        own_action, bonus = policy.sample(out, agent.mask, key)
        select = jax.nn.one_hot(agent.index, n)[None, :, None]
        joint = b.action * (1.0 - select) + own_action[:, None, :] * select
        used = jax.tree.map(lambda x: x[: variant.actor_critics], agent.critic)
        q = networks.apply_critics(critic_mlp, used, networks.critic_input(b.obs, joint))
        q = jnp.min(q, axis=0)
        loss = -jnp.mean(q) - alpha_of(agent.log_alpha) * jnp.mean(bonus)
        loss = loss + config.actor_reg * policy.reg(out, agent.mask)
        return loss, jnp.mean(bonus)

    def agent_critic_step(agent: _Agent, y: jax.Array, batch: Transition, weights: jax.Array):
        (loss, (td, q_mean)), grad = jax.value_and_grad(critic_loss, has_aux=True)(
            agent.critic, batch, weights, y)
        critic, critic_opt = _flat_step(critic_tx, grad, agent.critic_opt, agent.critic)
        return agent._replace(critic=critic, critic_opt=critic_opt), CriticInfo(loss, td, q_mean)

    def agent_actor_step(agent: _Agent, key: jax.Array, batch: Transition):
        (loss, entropy), grad = jax.value_and_grad(actor_loss, has_aux=True)(
            agent.actor, agent, batch, key)
        actor, actor_opt = _flat_step(actor_tx, grad, agent.actor_opt, agent.actor)
        log_alpha, alpha_opt = agent.log_alpha, agent.alpha_opt
        if variant.entropy and config.auto_alpha:
            # SAC's temperature loss (Haarnoja et al. 2018b, eq. 18) with E[-log pi] = H.
            g = jax.lax.stop_gradient(entropy - agent.target_entropy)
            l_upd, alpha_opt = alpha_tx.update(g, alpha_opt, log_alpha)
            log_alpha = optax.apply_updates(log_alpha, l_upd)
        new = agent._replace(actor=actor, actor_opt=actor_opt, log_alpha=log_alpha,
                             alpha_opt=alpha_opt)
        return new, ActorInfo(loss, entropy)

    def target_q(state: AlgoState, batch: Transition, key: jax.Array) -> jax.Array:
        per_agent = check_batch(batch)
        nxt = next_inputs(state, batch, key, per_agent)
        with_y = lambda agent, nxt: (agent, agent_target(agent, nxt))
        return over_agents(with_y, agents_of(state), (), (nxt,), per_agent)[1]

    def critic_step(state: AlgoState, batch: Transition, weights: jax.Array, y: jax.Array):
        per_agent = check_batch(batch, weights)
        chex.assert_shape(y, (n, batch.reward.shape[-2]))
        agents, info = over_agents(agent_critic_step, agents_of(state), (y,),
                                   (batch, weights.astype(jnp.float32)), per_agent)
        return with_agents(state, agents), info

    def actor_step(state: AlgoState, batch: Transition, key: jax.Array):
        per_agent = check_batch(batch)
        agents, info = over_agents(agent_actor_step, agents_of(state),
                                   (jax.random.split(key, n),), (batch,), per_agent)
        return with_agents(state, agents), info

    def target_update(state: AlgoState) -> AlgoState:
        return state.replace(
            target_actor=optax.incremental_update(state.actor, state.target_actor, config.tau),
            target_critic=optax.incremental_update(state.critic, state.target_critic, config.tau),
        )

    def update(state: AlgoState, batch: Transition, weights: jax.Array, key: jax.Array):
        per_agent = check_batch(batch, weights)
        next_key, agents_key = jax.random.split(key)
        do_actor = (state.step + 1) % variant.policy_delay == 0

        def agent_update(agent: _Agent, key: jax.Array, nxt: _Next, weights: jax.Array):
            # one agent's target_q, critic_step and actor_step (see Phases)
            agent, c_info = agent_critic_step(agent, agent_target(agent, nxt), nxt.batch, weights)
            if variant.policy_delay == 1:
                agent, a_info = agent_actor_step(agent, key, nxt.batch)
            else:
                skip = lambda a: (a, ActorInfo(jnp.zeros(()), jnp.zeros(())))
                agent, a_info = jax.lax.cond(
                    do_actor, lambda a: agent_actor_step(a, key, nxt.batch), skip, agent)
            return agent, (c_info, a_info)

        data = (next_inputs(state, batch, next_key, per_agent), weights.astype(jnp.float32))
        agents, (c_info, a_info) = over_agents(
            agent_update, agents_of(state), (jax.random.split(agents_key, n),), data, per_agent)
        new_state = target_update(with_agents(state, agents))
        if variant.policy_delay > 1:
            keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(do_actor, a, b), new, old)
            new_state = new_state.replace(
                target_actor=keep(new_state.target_actor, state.target_actor),
                target_critic=keep(new_state.target_critic, state.target_critic))
        new_state = new_state.replace(step=state.step + 1)
        metrics = {"critic_loss": jnp.mean(c_info.loss), "actor_loss": jnp.mean(a_info.loss),
                   "q_mean": jnp.mean(c_info.q_mean), "entropy": jnp.mean(a_info.entropy),
                   "alpha": jnp.mean(alpha_of(new_state.log_alpha)),
                   "td_error": jnp.mean(c_info.td),
                   "actor_updated": do_actor.astype(jnp.float32)}
        return new_state, metrics, c_info.td if per_agent else c_info.td.T

    phases = Phases(target_q=target_q, critic_step=critic_step, actor_step=actor_step,
                    target_update=target_update)
    return Algo(init=init, act=act, update=update, action_dim=adim, phases=phases)
