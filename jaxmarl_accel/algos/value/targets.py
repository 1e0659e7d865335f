"""Action choice over available actions, double-Q bootstrap values and TD(lambda) targets.

All functions are pure and shape-polymorphic over leading batch axes; the trailing axes
are named in each docstring.

Epsilon-greedy draws its uniform action from a ``distrax.Categorical`` over the available
actions; the mixture with the greedy action is computed here, because
``distrax.EpsilonGreedy`` spreads ``epsilon`` over all actions, unavailable ones included,
and breaks ties between maximisers at random where :func:`greedy` takes the first.
"""

from __future__ import annotations

import distrax
import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.value.config import ValueConfig


def epsilon(config: ValueConfig, env_steps: jax.Array) -> jax.Array:
    """The exploration rate after ``env_steps`` env steps: linear from ``epsilon_start`` to
    ``epsilon_finish`` over ``epsilon_anneal_steps``, then constant. ``[]`` float32."""
    frac = jnp.minimum(env_steps.astype(jnp.float32) / config.epsilon_anneal_steps, 1.0)
    return config.epsilon_start + frac * (config.epsilon_finish - config.epsilon_start)


def masked_q(q: jax.Array, avail: jax.Array) -> jax.Array:
    """``q [..., A]`` with unavailable actions (``avail [..., A]`` False) at ``-inf``."""
    return jnp.where(avail, q, -jnp.inf)


def greedy(q: jax.Array, avail: jax.Array) -> jax.Array:
    """Greedy action over the available ones: ``q [..., A]``, ``avail [..., A]`` bool ->
    ``[...]`` int32 (the first maximiser; at least one action must be available)."""
    return jnp.argmax(masked_q(q, avail), axis=-1).astype(jnp.int32)


def epsilon_greedy(q: jax.Array, avail: jax.Array, eps: jax.Array, key: jax.Array) -> jax.Array:
    """Each agent independently: with probability ``eps`` a uniform available action,
    otherwise the greedy one. ``q [..., A]``, ``avail [..., A]`` bool, ``eps []`` ->
    ``[...]`` int32 (always an available action)."""
    explore_key, uniform_key = jax.random.split(key)
    uniform = distrax.Categorical(logits=jnp.where(avail, 0.0, -jnp.inf), dtype=jnp.int32)
    random = uniform.sample(seed=uniform_key)
    explore = jax.random.uniform(explore_key, random.shape) < eps
    return jnp.where(explore, random, greedy(q, avail))


def chosen(q: jax.Array, action: jax.Array) -> jax.Array:
    """``q [..., A]`` at ``action [...]`` (int) -> ``[...]``."""
    return jnp.take_along_axis(q, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def bootstrap_q(target_q: jax.Array, online_q: jax.Array, avail: jax.Array,
                double_q: bool) -> jax.Array:
    """Each agent's bootstrap value ``max_a Q^-(., a)`` over available actions.

    With ``double_q`` the action is the online network's greedy one, evaluated by the
    target network (double Q-learning, van Hasselt et al. 2016, eq. 4); otherwise the target
    network's own maximum (DQN). ``target_q, online_q [..., A]``, ``avail [..., A]`` bool ->
    ``[...]``; no gradient flows through ``online_q``.
    """
    if not double_q:
        return jnp.max(masked_q(target_q, avail), axis=-1)
    return chosen(target_q, greedy(jax.lax.stop_gradient(online_q), avail))


def td_lambda_targets(reward: jax.Array, terminated: jax.Array, filled: jax.Array,
                      q_boot: jax.Array, gamma: float, lam: float) -> jax.Array:
    """Lambda-returns of whole episodes (Sutton & Barto 2018, Sec. 12.1, recursive form):

    ``y_t = r_t + gamma (1 - term_t) [(1 - lam) Q(t+1) + lam G(t+1)]`` with
    ``G(t+1) = y_{t+1}`` while row t+1 is a filled step and ``G(t+1) = Q(t+1)`` at the row
    after an episode's last filled step (the bootstrap of a truncated episode; a terminated
    one has ``term_t = 1`` there and bootstraps nothing). ``lam = 0`` gives one-step
    targets, ``lam = 1`` the discounted return bootstrapped once at the end.

    pymarl2's ``build_td_lambda_targets`` computes the same values for every filled step of
    episodes that terminate or run to the time limit T (its only cases): it starts the
    recursion at row T with ``Q(T) (1 - terminated anywhere)`` and shrinks every
    unfilled row's value by ``lam gamma``. It differs for an episode truncated before
    row T, which it bootstraps on ``(lam gamma)^(T - len) Q(T)`` (the padding row) where
    this function uses ``Q(len)``, and on unfilled rows, whose values no loss uses.

    Args:
      reward: ``[B, T + 1]`` team reward of each step (row T unused).
      terminated: ``[B, T + 1]`` 1.0 at the step that terminated the episode.
      filled: ``[B, T + 1]`` 1.0 for the steps the episode took (row T is 0).
      q_boot: ``[B, T + 1, H]`` bootstrap values ``Q(t)`` of each row and head (row 0
        unused).
      gamma: discount factor.
      lam: lambda in ``[0, 1]``.

    Returns:
      ``[B, T, H]`` targets of rows 0..T-1 (only filled rows are meaningful).
    """
    reward, terminated = reward[:, :-1, None], terminated[:, :-1, None]  # [B, T, 1]
    filled_next, q_next = filled[:, 1:, None], q_boot[:, 1:]  # row t + 1, [B, T, (1 | H)]

    def back(y_next: jax.Array, row: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        r, term, filled_1, q_1 = row  # step t: [B, 1], [B, 1], [B, 1], [B, H]
        cont = jnp.where(filled_1 > 0, y_next, q_1)  # G(t+1): y_{t+1}, or Q(t+1) at the end
        y = r + gamma * (1.0 - term) * ((1.0 - lam) * q_1 + lam * cont)
        return y, y

    rows = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), (reward, terminated, filled_next, q_next))
    _, ys = jax.lax.scan(back, jnp.zeros_like(q_next[:, -1]), rows, reverse=True)
    return jnp.swapaxes(ys, 0, 1)
