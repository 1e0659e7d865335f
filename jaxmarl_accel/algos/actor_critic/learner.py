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
   MATD3 does this step (and step 3) only every ``policy_delay`` updates;
3. soft target updates of all agents after the loop over agents (Alg. 1 line 14).

The three algorithms differ only in the functions a :class:`Variant` plugs in. Steps 1-2
map over the agents as ``config.learners`` says (:mod:`~jaxmarl_accel.algos.actor_critic.agent_map`:
one ``vmap``, or a ``lax.scan`` agent by agent); both compute the same update, since no
agent reads another agent's new parameters within one update. (The original MADDPG code
soft-updates agent i's targets inside its loop, so later agents' critic targets see the
earlier agents' freshly moved target actors; we follow paper 001's Alg. 1 and move all
targets after the loop.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos import networks
from jaxmarl_accel.algos.base import Algo, Needs
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig, actor_step_form
from jaxmarl_accel.algos.distributions import ActionDistribution, make_distribution
from jaxmarl_accel.algos.actor_critic.agent_map import LEARNERS
from jaxmarl_accel.algos.actor_critic.variant import Variant
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Transition

PyTree = Any


@struct.dataclass
class ActorCriticState:
    """Learner state of all N agents (every leaf has the agent axis first).

    Attributes:
      actor: online actor parameters, leaves ``[N, ...]``.
      critic: online critic parameters, leaves ``[N, C, ...]`` (C critics per agent).
      target_actor: target actor parameters, like ``actor``.
      target_critic: target critic parameters, like ``critic``.
      actor_opt: optax state of each agent's actor parameters raveled into one vector
        (stacked ``[N, ...]``); see :func:`~.losses.flat_step`.
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
    agents) or ``[N, B, N, ...]`` (agent i learns from ``batch[i]``), as for ``update``.

    Attributes:
      target_q: ``(state, batch, key) -> y [N, B]``, the critic targets ``y_i``.
      critic_step: ``(state, batch, weights, y [N, B]) -> (state, CriticInfo)``: one
        optimizer step of every agent's critics on the loss weighted by ``weights`` (``[B]``,
        or ``[N, B]`` for per-agent batches); updates ``critic`` and ``critic_opt``.
      actor_step: ``(state, batch, key) -> (state, ActorInfo)``: one optimizer step of
        every agent's actor through ``state.critic``, and of its temperature; updates
        ``actor``, ``actor_opt``, ``log_alpha`` and ``alpha_opt``.
      target_update: ``state -> state`` with ``target_actor`` and ``target_critic`` moved
        towards ``actor`` and ``critic`` by ``config.tau``.
    """

    target_q: Callable[[ActorCriticState, Transition, jax.Array], jax.Array]
    critic_step: Callable[..., tuple[ActorCriticState, CriticInfo]]
    actor_step: Callable[[ActorCriticState, Transition, jax.Array],
                         tuple[ActorCriticState, ActorInfo]]
    target_update: Callable[[ActorCriticState], ActorCriticState]


class Skeleton(NamedTuple):
    """The static parts of one learner, bound (``functools.partial``) to the steps below."""

    spec: EnvSpec
    config: ActorCriticConfig
    variant: Variant
    dist: ActionDistribution
    actor_mlp: networks.MLP
    critic_mlp: networks.MLP
    actor_tx: optax.GradientTransformation
    critic_tx: optax.GradientTransformation
    alpha_tx: optax.GradientTransformation
    mask: jax.Array  # [N, A] bool valid actions
    target_entropy: jax.Array  # [N]
    map_agents: Callable[..., tuple[PyTree, Any]]  # learners.parallel or .sequential
    joint_q: Callable[..., jax.Array]  # losses.joint_q_linear or .joint_q_full


class Agent(NamedTuple):
    """Agent i's slice of :class:`ActorCriticState` plus its static per-agent inputs (the leaves of
    :class:`ActorCriticState` without their leading agent axis).

    Attributes:
      index: ``[]`` int32, i; mask: ``[A]`` bool valid actions; target_entropy: ``[]``.
      actor, critic, target_critic: its parameters (critic leaves ``[C, ...]``).
      actor_opt, critic_opt, log_alpha, alpha_opt: its optimizer states and temperature.
    """

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


class NextInputs(NamedTuple):
    """What agent i's critic target comes from: a batch (leaves ``[B, N, ...]``), every
    agent's next action ``[B, N, A]`` at ``batch.next_obs`` and its entropy bonus ``[B, N]``."""

    batch: Transition
    action: jax.Array
    bonus: jax.Array


def target_entropy_of(spec: EnvSpec, config: ActorCriticConfig) -> jax.Array:
    """Each agent's entropy target ``[N]`` (MASAC): ``config.target_entropy``, else
    ``-act_dim`` (continuous) or half the log of its valid actions (discrete)."""
    if config.target_entropy is not None:
        return jnp.full((spec.num_agents,), config.target_entropy, jnp.float32)
    if spec.continuous:
        return jnp.full((spec.num_agents,), -float(spec.act_dim), jnp.float32)
    return 0.5 * jnp.log(jnp.asarray(spec.action_sizes, jnp.float32))


def make_skeleton(spec: EnvSpec, config: ActorCriticConfig, variant: Variant) -> Skeleton:
    """All static set-up of a learner: networks, distribution, optimizers, masks."""
    dist = make_distribution(spec, config, variant.continuous_default)
    n = spec.num_agents
    return Skeleton(
        spec=spec, config=config, variant=variant, dist=dist,
        actor_mlp=networks.MLP(config.hidden_sizes, dist.out_size),
        critic_mlp=networks.MLP(config.hidden_sizes, 1),
        actor_tx=losses.make_optimizer(config.actor_lr, config.grad_clip),
        critic_tx=losses.make_optimizer(config.critic_lr, config.grad_clip),
        alpha_tx=optax.adam(config.alpha_lr),
        mask=spec.action_mask if not spec.continuous else jnp.ones((n, dist.action_dim), bool),
        target_entropy=target_entropy_of(spec, config), map_agents=LEARNERS[config.learners],
        joint_q=losses.JOINT_Q[actor_step_form(config.actor_step, spec.num_agents)])


def init(sk: Skeleton, key: jax.Array) -> ActorCriticState:
    """Fresh learner state of all agents (targets equal to the online networks)."""
    n = sk.spec.num_agents
    actor_key, critic_key = jax.random.split(key)
    critic_in = n * (sk.spec.obs_dim + sk.dist.action_dim)
    actor = networks.init_actors(sk.actor_mlp, actor_key, n, sk.spec.obs_dim)
    critic = networks.init_critics(sk.critic_mlp, critic_key, n, sk.variant.num_critics,
                                   critic_in)
    log_alpha = jnp.full((n,), jnp.log(max(sk.config.alpha, 1e-30)), jnp.float32)
    return ActorCriticState(
        actor=actor, critic=critic, target_actor=actor, target_critic=critic,
        actor_opt=jax.vmap(lambda p: losses.flat_init(sk.actor_tx, p))(actor),
        critic_opt=jax.vmap(lambda p: losses.flat_init(sk.critic_tx, p))(critic),
        log_alpha=log_alpha, alpha_opt=jax.vmap(sk.alpha_tx.init)(log_alpha),
        step=jnp.zeros((), jnp.int32),
    )


def act(sk: Skeleton, state: ActorCriticState, obs: jax.Array, key: jax.Array,
        explore: bool) -> tuple[jax.Array, jax.Array]:
    """Every agent's action at ``obs [..., N, obs_dim]`` (see :attr:`Algo.act`)."""
    chex.assert_axis_dimension(obs, -2, sk.spec.num_agents)
    chex.assert_axis_dimension(obs, -1, sk.spec.obs_dim)
    out = networks.apply_actors(sk.actor_mlp, state.actor, obs)
    if explore:
        return sk.dist.explore(out, sk.mask, key)
    return sk.dist.exploit(out, sk.mask)


def check_batch(sk: Skeleton, batch: Transition, weights: jax.Array | None = None) -> bool:
    """Trace-time shape checks; True for per-agent batches (leaves ``[N, B, N, ...]``)."""
    n, per_agent = sk.spec.num_agents, batch.reward.ndim == 3
    lead = (n,) if per_agent else ()
    bsz = batch.reward.shape[-2]
    chex.assert_shape(batch.obs, (*lead, bsz, n, sk.spec.obs_dim))
    chex.assert_shape(batch.next_obs, (*lead, bsz, n, sk.spec.obs_dim))
    chex.assert_shape(batch.action, (*lead, bsz, n, sk.dist.action_dim))
    chex.assert_shape([batch.reward, batch.done], (*lead, bsz, n))
    if weights is not None:
        chex.assert_shape(weights, (*lead, bsz))
    return per_agent


def agents_of(sk: Skeleton, state: ActorCriticState) -> Agent:
    """All agents' slices of ``state``, stacked: every :class:`Agent` leaf ``[N, ...]``."""
    return Agent(
        index=jnp.arange(sk.spec.num_agents), mask=sk.mask, target_entropy=sk.target_entropy,
        actor=state.actor, critic=state.critic, target_critic=state.target_critic,
        actor_opt=state.actor_opt, critic_opt=state.critic_opt,
        log_alpha=state.log_alpha, alpha_opt=state.alpha_opt)


def _with_agents(state: ActorCriticState, agents: Agent) -> ActorCriticState:
    return state.replace(
        actor=agents.actor, critic=agents.critic, actor_opt=agents.actor_opt,
        critic_opt=agents.critic_opt, log_alpha=agents.log_alpha, alpha_opt=agents.alpha_opt)


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
    return _with_agents(state, agents), info


def actor_step(sk: Skeleton, state: ActorCriticState, batch: Transition,
               key: jax.Array) -> tuple[ActorCriticState, ActorInfo]:
    """Step 2 for all agents: one actor (and temperature) step each (see :class:`Phases`)."""
    per_agent = check_batch(sk, batch)
    agents, info = sk.map_agents(functools.partial(agent_actor_step, sk), agents_of(sk, state),
                                 (jax.random.split(key, sk.spec.num_agents),), (batch,),
                                 per_agent)
    return _with_agents(state, agents), info


def target_update(sk: Skeleton, state: ActorCriticState) -> ActorCriticState:
    """Step 3: soft target updates of all agents by ``tau`` (Alg. 1 line 14)."""
    tau = sk.config.tau
    return state.replace(
        target_actor=optax.incremental_update(state.actor, state.target_actor, tau),
        target_critic=optax.incremental_update(state.critic, state.target_critic, tau),
    )


def update(sk: Skeleton, state: ActorCriticState, batch: Transition, weights: jax.Array,
           key: jax.Array) -> tuple[ActorCriticState, dict[str, jax.Array], jax.Array]:
    """One update of all agents (see :attr:`Algo.update`): each agent's steps 1-2 in one
    pass over the agents, then step 3; actor and targets only every ``policy_delay``."""
    per_agent = check_batch(sk, batch, weights)
    next_key, agents_key = jax.random.split(key)
    delay = sk.variant.policy_delay
    do_actor = (state.step + 1) % delay == 0

    def agent_update(agent: Agent, key: jax.Array, nxt: NextInputs, weights: jax.Array):
        # one agent's target_q, critic_step and actor_step (see Phases)
        y = agent_target(sk, agent, nxt)
        agent, c_info = agent_critic_step(sk, agent, y, nxt.batch, weights)
        if delay == 1:
            agent, a_info = agent_actor_step(sk, agent, key, nxt.batch)
        else:
            skip = lambda a: (a, ActorInfo(jnp.zeros(()), jnp.zeros(())))
            agent, a_info = jax.lax.cond(
                do_actor, lambda a: agent_actor_step(sk, a, key, nxt.batch), skip, agent)
        return agent, (c_info, a_info)

    data = (_next_inputs(sk, state, batch, next_key, per_agent), weights.astype(jnp.float32))
    agents, (c_info, a_info) = sk.map_agents(
        agent_update, agents_of(sk, state),
        (jax.random.split(agents_key, sk.spec.num_agents),), data, per_agent)
    new_state = finish_update(sk, state, _with_agents(state, agents), do_actor)
    metrics = update_metrics(sk, new_state, c_info, a_info, do_actor)
    return new_state, metrics, c_info.td if per_agent else c_info.td.T


def finish_update(sk: Any, state: ActorCriticState, new_state: ActorCriticState,
                  do_actor: jax.Array) -> ActorCriticState:
    """Step 3 after every agent's (or group's) steps 1-2 gave ``new_state``: soft target
    updates, kept back on MATD3's delayed steps (``do_actor`` False), and ``step + 1``.
    ``sk`` needs ``config.tau`` and ``variant.policy_delay``."""
    new_state = target_update(sk, new_state)
    if sk.variant.policy_delay > 1:
        keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(do_actor, a, b), new, old)
        new_state = new_state.replace(
            target_actor=keep(new_state.target_actor, state.target_actor),
            target_critic=keep(new_state.target_critic, state.target_critic))
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
    source); ``update`` is composed of the per-agent functions behind ``phases``."""
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

    phases = Phases(target_q=target_q_fn, critic_step=critic_step_fn,
                    actor_step=actor_step_fn, target_update=target_update_fn)
    return bind_learner(sk, init, act, update, phases)


def bind_learner(sk: Any, init_of: Callable, act_of: Callable, update_of: Callable,
                 phases: Phases | None) -> Algo:
    """The :class:`Algo` of a transition-replay learner whose ``init_of(sk, key)``,
    ``act_of(sk, state, obs, key, explore)`` and ``update_of(sk, state, batch, weights,
    key)`` take its static skeleton ``sk`` first (which has the action distribution
    ``sk.dist``): the three with ``sk`` bound, as plain functions."""

    def init_fn(key: jax.Array) -> ActorCriticState:
        return init_of(sk, key)

    def act_fn(state: ActorCriticState, obs: jax.Array, key: jax.Array, explore: bool):
        return act_of(sk, state, obs, key, explore)

    def update_fn(state: ActorCriticState, batch: Transition, weights: jax.Array, key: jax.Array):
        return update_of(sk, state, batch, weights, key)

    return Algo(init=init_fn, act=act_fn, update=update_fn, action_dim=sk.dist.action_dim,
                phases=phases, needs=Needs(replay="transition"))
