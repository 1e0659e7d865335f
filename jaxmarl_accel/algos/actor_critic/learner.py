"""The shared actor-critic skeleton of MADDPG, MATD3 and MASAC.

One update (Lowe et al. 2017, Alg. 1 lines 9-14; paper 001 Alg. 1) for every agent i:

1. centralized critic regression (paper 001 eq. 2, :func:`~.losses.critic_target`,
   :func:`~.losses.critic_loss`), importance-weighted, with next actions ``a'_j`` from the
   variant's ``next_action`` applied to its ``next_actors`` (MADDPG: target actors; MATD3:
   target actors plus smoothing noise; MASAC: current actors) and its entropy term;
2. decentralized actor step (paper 001 eq. 1, :func:`~.losses.actor_loss`) through the
   relaxed own action, the other agents' actions taken from the replay, ascending the
   variant's ``actor_critics`` (MADDPG, MATD3: the first critic; MASAC: the min of both),
   evaluated as ``config.actor_step`` says (:data:`~.losses.JOINT_Q`: from the critics'
   first-layer product with the replayed input plus the own action's correction, exact
   since that layer is linear, or through every agent's copy of the joint input);
   the variant's :class:`~.variant.ActorSchedule` says on which updates this step (and
   step 3) runs (MATD3: one in every ``policy_delay``, TD3 Alg. 1; others: every update);
3. soft target updates of all agents after the loop over agents (Alg. 1 line 14).

The three algorithms differ only in the functions a :class:`Variant` plugs in. Steps 1-2
map over the agents as ``config.learners`` says (:mod:`~jaxmarl_accel.algos.actor_critic.agent_map`:
one ``vmap``, or a ``lax.scan`` agent by agent); both compute the same update, since no
agent reads another agent's new parameters within one update. (The original MADDPG code
soft-updates agent i's targets inside its loop, so later agents' critic targets see the
earlier agents' freshly moved target actors; we follow paper 001's Alg. 1 and move all
targets after the loop.) The state, its per-agent slices and the static set-up are in
:mod:`~.state`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax

from jaxmarl_accel.algos import networks
from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.algos.actor_critic.state import (
    ActorCriticState,
    ActorInfo,
    Agent,
    CriticInfo,
    NextInputs,
    Phases,
    Skeleton,
    agents_of,
    check_batch,
    make_skeleton,
    with_agents,
)
from jaxmarl_accel.algos.actor_critic.variant import Variant
from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Policy, Transition


def init(sk: Skeleton, key: jax.Array) -> ActorCriticState:
    """Fresh learner state of all agents (targets equal to the online networks)."""
    n = sk.spec.num_agents
    actor_key, critic_key = jax.random.split(key)
    critic_in = n * (sk.spec.obs_dim + sk.dist.action_dim)
    actor = networks.init_actors(sk.actor_mlp, actor_key, n, sk.spec.obs_dim)
    critic = networks.init_critics(sk.critic_mlp, critic_key, n, sk.variant.num_critics,
                                   critic_in)
    log_alpha = jnp.full((n,), jnp.log(jnp.maximum(sk.config.alpha, 1e-30)), jnp.float32)
    return ActorCriticState(
        actor=actor, critic=critic, target_actor=actor, target_critic=critic,
        actor_opt=jax.vmap(lambda p: losses.flat_init(sk.actor_tx, p))(actor),
        critic_opt=jax.vmap(lambda p: losses.flat_init(sk.critic_tx, p))(critic),
        log_alpha=log_alpha, alpha_opt=jax.vmap(sk.alpha_tx.init)(log_alpha),
        step=jnp.zeros((), jnp.int32),
    )


def act(sk: Skeleton, state: ActorCriticState, obs: jax.Array, key: jax.Array,
        explore: bool) -> tuple[jax.Array, jax.Array]:
    """Every agent's ``(env_action, action_vec)`` at ``obs [..., N, obs_dim]``, explored or
    greedy (``explore``, static): what the learner's policy returns (:attr:`Algo.policy`)."""
    chex.assert_axis_dimension(obs, -2, sk.spec.num_agents)
    chex.assert_axis_dimension(obs, -1, sk.spec.obs_dim)
    out = networks.apply_actors(sk.actor_mlp, state.actor, obs)
    if explore:
        return sk.dist.explore(out, sk.mask, key)
    return sk.dist.exploit(out, sk.mask)


def _next_inputs(sk: Skeleton, state: ActorCriticState, batch: Transition, key: jax.Array,
                 per_agent: bool) -> NextInputs:
    """Next actions of all agents at ``batch.next_obs`` (one key per agent's batch)."""
    params = sk.variant.next_actors(state)
    apply = lambda obs, k: sk.variant.next_action(
        sk.dist, networks.apply_actors(sk.actor_mlp, params, obs), sk.mask, k)
    if per_agent:
        action, bonus = jax.vmap(apply)(batch.next_obs, jax.random.split(key, sk.spec.num_agents))
    else:
        action, bonus = apply(batch.next_obs, key)
    return NextInputs(batch, action, bonus)


def agent_target(sk: Skeleton, agent: Agent, nxt: NextInputs) -> jax.Array:
    """Agent i's critic target ``y_i`` ``[B]`` (paper 001 eq. 2; :func:`~.losses.critic_target`)
    with the variant's entropy coefficient."""
    b, i = nxt.batch, agent.index
    return losses.critic_target(
        sk.critic_mlp, agent.target_critic, b.next_obs, nxt.action, b.reward[:, i],
        b.done[:, i], nxt.bonus[:, i], sk.variant.alpha(agent.log_alpha), sk.config.gamma)


def agent_critic_step(sk: Skeleton, agent: Agent, y: jax.Array, batch: Transition,
                      weights: jax.Array) -> tuple[Agent, CriticInfo]:
    """One optimizer step of agent i's critics on the weighted regression to ``y [B]``
    (paper 001 eq. 2; :func:`~.losses.critic_loss`), ``batch`` leaves ``[B, N, ...]``,
    ``weights [B]``; returns the agent with new ``critic`` and ``critic_opt``."""
    (loss, (td, q_mean)), grad = jax.value_and_grad(losses.critic_loss, has_aux=True)(
        agent.critic, sk.critic_mlp, batch.obs, batch.action, weights, y)
    critic, critic_opt = losses.flat_step(sk.critic_tx, grad, agent.critic_opt, agent.critic)
    return agent._replace(critic=critic, critic_opt=critic_opt), CriticInfo(loss, td, q_mean)


def agent_actor_step(sk: Skeleton, agent: Agent, key: jax.Array,
                     batch: Transition) -> tuple[Agent, ActorInfo]:
    """One optimizer step of agent i's actor (paper 001 eq. 1; :func:`~.losses.actor_loss`)
    on ``batch`` (leaves ``[B, N, ...]``), then the variant's temperature step (SAC eq. 18
    or none); returns the agent with new ``actor``, ``actor_opt``, ``log_alpha``, ``alpha_opt``."""
    (loss, entropy), grad = jax.value_and_grad(losses.actor_loss, has_aux=True)(
        agent.actor, sk.actor_mlp, sk.critic_mlp, sk.dist, agent.index, agent.mask,
        sk.variant.actor_critics(agent.critic), batch.obs, batch.action, key,
        sk.variant.alpha(agent.log_alpha), sk.config.actor_reg, sk.joint_q)
    actor, actor_opt = losses.flat_step(sk.actor_tx, grad, agent.actor_opt, agent.actor)
    log_alpha, alpha_opt = sk.variant.temperature(
        sk.alpha_tx, agent.log_alpha, agent.alpha_opt, entropy, agent.target_entropy)
    new = agent._replace(actor=actor, actor_opt=actor_opt, log_alpha=log_alpha,
                         alpha_opt=alpha_opt)
    return new, ActorInfo(loss, entropy)


def target_q(sk: Skeleton, state: ActorCriticState, batch: Transition, key: jax.Array) -> jax.Array:
    """Step 1a for all agents: the critic targets ``y [N, B]`` (see :class:`Phases`)."""
    per_agent = check_batch(sk, batch)
    nxt = _next_inputs(sk, state, batch, key, per_agent)
    with_y = lambda agent, nxt: (agent, agent_target(sk, agent, nxt))
    return sk.map_agents(with_y, agents_of(sk, state), (), (nxt,), per_agent)[1]


def critic_step(sk: Skeleton, state: ActorCriticState, batch: Transition, weights: jax.Array,
                y: jax.Array) -> tuple[ActorCriticState, CriticInfo]:
    """Step 1b for all agents: one critic optimizer step each (see :class:`Phases`)."""
    per_agent = check_batch(sk, batch, weights)
    chex.assert_shape(y, (sk.spec.num_agents, batch.reward.shape[-2]))
    agents, info = sk.map_agents(functools.partial(agent_critic_step, sk), agents_of(sk, state),
                                 (y,), (batch, weights.astype(jnp.float32)), per_agent)
    return with_agents(state, agents), info


def actor_step(sk: Skeleton, state: ActorCriticState, batch: Transition,
               key: jax.Array) -> tuple[ActorCriticState, ActorInfo]:
    """Step 2 for all agents: one actor (and temperature) step each (see :class:`Phases`)."""
    per_agent = check_batch(sk, batch)
    agents, info = sk.map_agents(functools.partial(agent_actor_step, sk), agents_of(sk, state),
                                 (jax.random.split(key, sk.spec.num_agents),), (batch,),
                                 per_agent)
    return with_agents(state, agents), info


def target_update(sk: Skeleton, state: ActorCriticState) -> ActorCriticState:
    """Step 3: soft target updates of all agents by ``tau`` (Alg. 1 line 14)."""
    tau = sk.config.tau
    return state.replace(
        target_actor=optax.incremental_update(state.actor, state.target_actor, tau),
        target_critic=optax.incremental_update(state.critic, state.target_critic, tau),
    )


def held_actor_step(operand: Any) -> tuple[Any, ActorInfo]:
    """The actor step an :class:`~.variant.ActorSchedule` skips to: ``operand`` (one agent's
    or one group's slice of the state) unchanged, and a report of zeros (``[]`` each)."""
    return operand, ActorInfo(jnp.zeros(()), jnp.zeros(()))


def update(sk: Skeleton, state: ActorCriticState, batch: Transition, weights: jax.Array,
           key: jax.Array) -> tuple[ActorCriticState, dict[str, jax.Array], jax.Array]:
    """One update of all agents (see :attr:`Algo.update`): each agent's steps 1-2 in one
    pass over the agents, then step 3; the actor step and the targets only on the updates
    the variant's :class:`~.variant.ActorSchedule` makes due (MATD3: every ``policy_delay``)."""
    per_agent = check_batch(sk, batch, weights)
    next_key, agents_key = jax.random.split(key)
    schedule = sk.variant.actor_schedule
    do_actor = schedule.due(state.step)

    def agent_update(agent: Agent, key: jax.Array, nxt: NextInputs, weights: jax.Array):
        # one agent's target_q, critic_step and actor_step (see Phases)
        y = agent_target(sk, agent, nxt)
        agent, c_info = agent_critic_step(sk, agent, y, nxt.batch, weights)
        agent, a_info = schedule.gate(
            do_actor, lambda a: agent_actor_step(sk, a, key, nxt.batch), held_actor_step, agent)
        return agent, (c_info, a_info)

    data = (_next_inputs(sk, state, batch, next_key, per_agent), weights.astype(jnp.float32))
    agents, (c_info, a_info) = sk.map_agents(
        agent_update, agents_of(sk, state),
        (jax.random.split(agents_key, sk.spec.num_agents),), data, per_agent)
    new_state = finish_update(sk, state, with_agents(state, agents), do_actor)
    metrics = update_metrics(sk, new_state, c_info, a_info, do_actor)
    return new_state, metrics, c_info.td if per_agent else c_info.td.T


def finish_update(sk: Any, state: ActorCriticState, new_state: ActorCriticState,
                  do_actor: jax.Array) -> ActorCriticState:
    """Step 3 after every agent's (or group's) steps 1-2 gave ``new_state``: soft target
    updates, kept back where the variant's :class:`~.variant.ActorSchedule` says so
    (``do_actor``, ``[]`` bool, from its ``due``), and ``step + 1``. ``sk`` needs
    ``config.tau`` and ``variant.actor_schedule``."""
    keep = sk.variant.actor_schedule.keep
    moved = target_update(sk, new_state)
    new_state = moved.replace(
        target_actor=keep(do_actor, moved.target_actor, state.target_actor),
        target_critic=keep(do_actor, moved.target_critic, state.target_critic))
    return new_state.replace(step=state.step + 1)


def update_metrics(sk: Any, new_state: ActorCriticState, c_info: CriticInfo, a_info: ActorInfo,
                   do_actor: jax.Array) -> dict[str, jax.Array]:
    """The update's metrics: the means of the critic and actor steps' reports (any shapes)
    and of the entropy coefficients, and whether the actors were updated."""
    return {"critic_loss": jnp.mean(c_info.loss), "actor_loss": jnp.mean(a_info.loss),
            "q_mean": jnp.mean(c_info.q_mean), "entropy": jnp.mean(a_info.entropy),
            "alpha": jnp.mean(sk.variant.alpha(new_state.log_alpha)),
            "td_error": jnp.mean(c_info.td), "actor_updated": do_actor.astype(jnp.float32)}


def build(spec: EnvSpec, config: ActorCriticConfig, variant: Variant) -> Algo:
    """The learner of one algorithm ``variant``: the steps above with its static parts bound
    (as plain functions, so that ``inspect`` and ``chex.assert_max_traces`` see their
    source); ``update`` is composed of the per-agent functions behind :func:`phases`."""
    return bind_learner(make_skeleton(spec, config, variant), init, act, update)


def phases(spec: EnvSpec, config: ActorCriticConfig, variant: Variant) -> Phases:
    """The steps the ``update`` of :func:`build`'s learner is composed of, each for all
    agents, with the same static parts bound (:class:`Phases`; the characterization runs
    and times them apart, on the state of that learner)."""
    sk = make_skeleton(spec, config, variant)

    def target_q_fn(state: ActorCriticState, batch: Transition, key: jax.Array) -> jax.Array:
        return target_q(sk, state, batch, key)

    def critic_step_fn(state: ActorCriticState, batch: Transition, weights: jax.Array,
                       y: jax.Array):
        return critic_step(sk, state, batch, weights, y)

    def actor_step_fn(state: ActorCriticState, batch: Transition, key: jax.Array):
        return actor_step(sk, state, batch, key)

    def target_update_fn(state: ActorCriticState) -> ActorCriticState:
        return target_update(sk, state)

    return Phases(target_q=target_q_fn, critic_step=critic_step_fn,
                  actor_step=actor_step_fn, target_update=target_update_fn)


def bind_learner(sk: Any, init_of: Callable, act_of: Callable, update_of: Callable) -> Algo:
    """The :class:`Algo` of a transition-replay learner whose ``init_of(sk, key)``,
    ``act_of(sk, state, obs, key, explore)`` and ``update_of(sk, state, batch, weights,
    key)`` take its static skeleton ``sk`` first (which has the action distribution
    ``sk.dist``): the three with ``sk`` bound, as plain functions; ``act_of`` behind the
    policy signature (:attr:`Algo.policy`: no memory, the carry ``()``; the valid actions
    ``sk.mask`` apply, ``avail`` is not read)."""

    def init_fn(key: jax.Array) -> ActorCriticState:
        return init_of(sk, key)

    def policy_fn(explore: bool) -> Policy:
        def policy(state: ActorCriticState, carry: tuple, key: jax.Array, obs: jax.Array,
                   avail: jax.Array) -> tuple[jax.Array, jax.Array, tuple]:
            del avail
            return (*act_of(sk, state, obs, key, explore), carry)

        return policy

    def update_fn(state: ActorCriticState, batch: Transition, weights: jax.Array, key: jax.Array):
        return update_of(sk, state, batch, weights, key)

    return Algo(init=init_fn, policy=policy_fn, update=update_fn,
                action_dim=sk.dist.action_dim)
