"""The data of the actor-critic skeleton (:mod:`~jaxmarl_accel.algos.actor_critic.learner`):
the learner state of all agents, one agent's slice of it, what its steps report, and its
static set-up (:class:`Skeleton`: networks, optimizers, masks, the plugged-in
:class:`~.variant.Variant`).

Shapes: N agents, B batch, A action-vector width, C critics of one agent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_accel.algos import networks
from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic.agent_map import LEARNERS
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig, actor_step_form
from jaxmarl_accel.algos.actor_critic.variant import Variant
from jaxmarl_accel.algos.distributions import ActionDistribution, make_distribution
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import PyTree, Transition


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
        state, _ = actor_step(state, batch, actor_key)  # where the actor schedule is due
        state = target_update(state)  # kept back where it is not

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


def with_agents(state: ActorCriticState, agents: Agent) -> ActorCriticState:
    """``state`` with the online parameters, optimizer states and temperatures of
    ``agents`` (every :class:`Agent` leaf ``[N, ...]``, as :func:`agents_of` gives)."""
    return state.replace(
        actor=agents.actor, critic=agents.critic, actor_opt=agents.actor_opt,
        critic_opt=agents.critic_opt, log_alpha=agents.log_alpha, alpha_opt=agents.alpha_opt)
