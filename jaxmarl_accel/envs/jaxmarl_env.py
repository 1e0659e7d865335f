"""JaxMARL's environments behind our :class:`~jaxmarl_accel.envs.base.Env` contract:
``make("jaxmarl:<id>", **kwargs)`` wraps ``jaxmarl.make(<id>, **kwargs)``.

* Agents are the array axis in JaxMARL's agent order (``env.agents``); team labels are the
  agent names without their ``_<index>`` (``ally``, ``enemy``, ``adversary``, ``agent``).
* Observations: each agent's observation flattened and zero padded to ``obs_dim`` (its true
  width in ``spec.obs_sizes``), float32. SMAX's ``world_state`` is the global state
  (``env.state_of``, ``info["state"]`` and ``info["final_state"]``), each feature mapped
  into [0, 1] (:func:`~.jaxmarl_families.smax_state_map`);
  envs without one (MPE, Overcooked, Hanabi) have none, and a mixer sees the concatenated
  observations.
* Actions: ``Discrete`` spaces give discrete actions ``[N]`` int32 (padded to the widest
  space; ``spec.action_sizes`` the true counts); 1-D ``Box`` spaces with finite bounds give
  continuous actions ``[N, act_dim]`` in our ``[0, 1]``, mapped linearly onto the Box:
  ``low + a * (high - low)`` (the identity for JaxMARL's MPE and SMAX boxes). Other spaces
  (``MultiDiscrete`` or ``Dict`` actions, a mix of discrete and continuous agents, ``Dict``
  observations) are refused with a one-line ``ValueError``.
* Available actions: JaxMARL's ``get_avail_actions`` (or Hanabi's ``get_legal_moves``),
  ``[N, num_actions]`` bool, in ``env.avail_actions``, ``info["avail_actions"]`` (returned
  observation) and ``info["final_avail_actions"]`` (pre-reset).
* Reward ``[N]`` float32, JaxMARL's per agent; ``spec.shared_reward`` where JaxMARL gives every
  agent the same one (SMAX against the heuristic enemy, Overcooked, Hanabi).
* Ends: we count the steps of each episode ourselves (``state.t``). ``terminated`` is an end
  JaxMARL reports (``dones["__all__"]``) before its time limit, or one the family can tell
  is real at any step (SMAX: one team wiped out, even on the last step); ``truncated`` is
  any other end: JaxMARL's time limit, or ``t`` reaching ``params.episode_length`` (which
  may be set below JaxMARL's limit, never above it: JaxMARL still ends its episodes
  there). ``spec.episode_length`` is JaxMARL's limit in our counting: ``max_steps + 1`` for
  MPE (26) and SMAX (101, JaxMARL tests the limit before counting the step), ``max_steps``
  for Overcooked (400); envs without a limit (Hanabi) take ``episode_length`` from the
  caller (default 1000), and only a caller's limit truncates them.
* Auto-reset: the step runs JaxMARL's ``step_env`` (which does not reset) and resets with
  JaxMARL's ``reset`` itself when the episode ended, so ``info["final_obs"]`` is the
  pre-reset observation. The step key splits into ``(step_env key, reset key)`` as
  JaxMARL's own ``step`` does, so the two are step for step equal.
* Episode counters (``spec.episode_stats``): SMAX's ``won`` (1 on the step that ends a won
  battle), so evaluations and summaries give a win rate.
* Scripted policy (``env.scripted_action``): SMAX and MPE spread (discrete actions) have
  ours (see :func:`~.jaxmarl_families.smax` and :func:`~.jaxmarl_families.mpe_spread`);
  the other families have none, ``scripted_action`` is the random policy over the
  available actions and ``spec.scripted`` is False: no normalized score is reported for
  them.

Keyword arguments: the constructor's (e.g. SMAX's ``max_steps``, ``see_enemy_actions``);
strings are converted where JaxMARL takes objects (SMAX ``scenario="3m"`` via its
``map_name_to_scenario``, Overcooked ``layout="cramped_room"``), and ``episode_length`` is
ours (see above). ``jaxmarl`` is imported on first use only. The wrapped env's functions are
in :mod:`~.jaxmarl_wrapped`.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import sys
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.envs import jaxmarl_wrapped as wrapped
from jaxmarl_accel.envs.base import Env, EnvSpec, bind_static
from jaxmarl_accel.envs.jaxmarl_families import Family, family_of
from jaxmarl_accel.envs.jaxmarl_wrapped import Actions, JaxMARLParams, JaxMARLState
from jaxmarl_accel.envs.registry import JAXMARL_PREFIX

PREFIX = JAXMARL_PREFIX
DEFAULT_UNLIMITED_LENGTH = 1000
OUR_KEYWORDS = ("episode_length",)
# Settings JaxMARL's SimpleMPE reads from its **kwargs (arrays, one per entity).
MPE_EXTRA_KEYWORDS = ("rad", "moveable", "silent", "collide", "mass", "accel", "max_speed",
                      "u_noise", "c_noise", "damping", "contact_force", "contact_margin")


def _jaxmarl() -> Any:
    """``jaxmarl``, imported on first use. Its import prints two lines on the process's
    standard output (past ``contextlib.redirect_stdout``); they are sent to the null device."""
    if "jaxmarl" in sys.modules:
        return sys.modules["jaxmarl"]
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            import jaxmarl
        sys.stdout.flush()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
    return jaxmarl


def registered_ids() -> tuple[str, ...]:
    """The env ids ``jaxmarl.make`` knows (some need optional packages)."""
    return tuple(_jaxmarl().registration.registered_envs)


def check_id(env_id: str) -> None:
    """One-line ``ValueError`` when ``env_id`` is not one of JaxMARL's ids."""
    if env_id not in registered_ids():
        raise ValueError(f"unknown JaxMARL env {env_id!r} (env {PREFIX}{env_id}); JaxMARL's "
                         f"ids: {', '.join(registered_ids())}")


def keywords(env_id: str) -> tuple[str, ...] | None:
    """The keyword arguments ``make(PREFIX + env_id)`` accepts (its constructor's, through the
    classes it passes ``**kwargs`` on to, and ours), or ``None`` when they cannot be read
    (the env cannot be built with its defaults)."""
    check_id(env_id)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            cls = type(_jaxmarl().make(env_id))
    except Exception:  # noqa: BLE001 (needs arguments or an optional package)
        return None
    from jaxmarl.environments.mpe.simple import SimpleMPE
    from jaxmarl.environments.smax.heuristic_enemy_smax_env import EnemySMAX
    from jaxmarl.environments.smax.smax_env import SMAX

    chain = list(cls.__mro__)
    if issubclass(cls, EnemySMAX):  # passes **env_kwargs to a SMAX it holds
        chain = [c for c in chain if issubclass(c, EnemySMAX)] + [SMAX]
    names: list[str] = []
    for klass in chain:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names += [p.name for p in params if p.name != "self"
                  and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break
    if issubclass(cls, SimpleMPE):
        names += MPE_EXTRA_KEYWORDS
    return tuple(dict.fromkeys([*names, *OUR_KEYWORDS]))


def _convert(env_id: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Strings where JaxMARL takes objects: SMAX's ``scenario``, Overcooked's ``layout``."""
    out = dict(kwargs)
    if "SMAX" in env_id and isinstance(out.get("scenario"), str):
        from jaxmarl.environments.smax.smax_env import MAP_NAME_TO_SCENARIO, map_name_to_scenario

        if out["scenario"] not in MAP_NAME_TO_SCENARIO:
            raise ValueError(f"scenario {out['scenario']!r} is not a SMAX map; maps: "
                             f"{', '.join(MAP_NAME_TO_SCENARIO)}")
        out["scenario"] = map_name_to_scenario(out["scenario"])
    if env_id == "overcooked" and isinstance(out.get("layout"), str):
        from jaxmarl.environments.overcooked.layouts import overcooked_layouts

        if out["layout"] not in overcooked_layouts:
            raise ValueError(f"layout {out['layout']!r} is not an Overcooked layout; layouts: "
                             f"{', '.join(overcooked_layouts)}")
        out["layout"] = overcooked_layouts[out["layout"]]
    return out


def make(env_id: str, **kwargs: Any) -> tuple[Env, JaxMARLParams]:
    """Builds JaxMARL's ``env_id`` with ``kwargs`` as an :class:`Env` (module docstring).

    Args:
      env_id: a JaxMARL id (``"HeuristicEnemySMAX"``, ``"MPE_simple_spread_v3"``, ...), without
        the ``jaxmarl:`` prefix.
      **kwargs: the constructor's keywords (strings converted, see the module docstring) and
        ``episode_length`` (ours).

    Returns:
      ``(env, params)``.
    """
    allowed = keywords(env_id)
    if allowed is not None:
        unknown = [name for name in kwargs if name not in allowed]
        if unknown:
            raise ValueError(f"{PREFIX}{env_id} takes no {', '.join(unknown)}; its keywords are "
                             f"{', '.join(allowed)}")
    length = kwargs.pop("episode_length", None)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            inner = _jaxmarl().make(env_id, **_convert(env_id, kwargs))
    except (TypeError, AssertionError, KeyError) as error:
        raise ValueError(f"{PREFIX}{env_id}: jaxmarl.make refused the keyword arguments "
                         f"{', '.join(map(repr, kwargs)) or '(none)'}: "
                         f"{' '.join(str(error).split())}") from None
    return wrap(inner, PREFIX + env_id, length)


def _flat_size(space: Any, name: str, agent: str) -> int:
    kind = type(space).__name__
    if kind not in ("Box", "MultiDiscrete", "Discrete"):
        raise ValueError(f"{name}: agent {agent}'s observation space {kind} is not supported "
                         "(Box, MultiDiscrete or Discrete)")
    shape = space.shape if isinstance(space.shape, tuple) else (space.shape,)
    return int(np.prod(shape, dtype=np.int64))


def _action_spaces(inner: Any, name: str) -> Actions:
    spaces = [inner.action_space(a) for a in inner.agents]
    kinds = {type(s).__name__ for s in spaces}
    if kinds == {"Discrete"}:
        return Actions(False, tuple(int(s.n) for s in spaces), tuple(s.dtype for s in spaces),
                        np.zeros((0,)), np.zeros((0,)))
    boxes = kinds == {"Box"} and all(
        isinstance(s.shape, tuple) and len(s.shape) == 1 for s in spaces)
    if not boxes:
        raise ValueError(f"{name}: action spaces {', '.join(sorted(kinds))} are not supported "
                         "(all Discrete, or all 1-D Box)")
    widths = tuple(int(s.shape[0]) for s in spaces)
    low = np.zeros((len(spaces), max(widths)), np.float32)
    span = np.zeros_like(low)
    for i, (space, width) in enumerate(zip(spaces, widths, strict=True)):
        lo = np.broadcast_to(np.asarray(space.low, np.float64), (width,))
        hi = np.broadcast_to(np.asarray(space.high, np.float64), (width,))
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError(f"{name}: agent {inner.agents[i]}'s Box action space has infinite "
                             "bounds; continuous actions need finite ones")
        low[i, :width], span[i, :width] = lo, hi - lo
    return Actions(True, widths, tuple(s.dtype for s in spaces), low, span)


def _avail_fn(inner: Any) -> Any:
    """JaxMARL's available-action function of ``inner`` (``state -> {agent: mask}``), or None."""
    from jaxmarl.environments.multi_agent_env import MultiAgentEnv

    if type(inner).get_avail_actions is not MultiAgentEnv.get_avail_actions:
        return inner.get_avail_actions
    return getattr(inner, "get_legal_moves", None)


def wrap(inner: Any, name: str, episode_length: int | None = None) -> tuple[Env, JaxMARLParams]:
    """The :class:`Env` of an already built JaxMARL env object ``inner`` (module docstring).

    Args:
      inner: a JaxMARL ``MultiAgentEnv``.
      name: the spec's name (``"jaxmarl:<id>"``).
      episode_length: our time limit (at most JaxMARL's); default JaxMARL's, or 1000 steps
        for envs without one.

    Returns:
      ``(env, params)``.
    """
    family: Family = family_of(inner)
    agents = tuple(inner.agents)
    obs_sizes = tuple(_flat_size(inner.observation_space(a), name, a) for a in agents)
    acts = _action_spaces(inner, name)
    episode_length = _episode_length(episode_length, family.time_limit)
    # masks choose among discrete actions; JaxNav defines them for its discrete mode alone
    # (its masks have another width than the continuous actions it steps by default)
    avail_fn = None if acts.continuous else _avail_fn(inner)
    spec = _spec(name, agents, obs_sizes, acts, episode_length, family)
    width_mask = (np.arange(spec.act_dim)[None, :] < np.asarray(acts.sizes)[:, None]
                  ).astype(np.float32)  # [N, act_dim] (continuous)
    w = wrapped.Wrapped(inner=inner, agents=agents, family=family, acts=acts, avail_fn=avail_fn,
                        spec=spec, width_mask=width_mask)
    bind = bind_static
    env = Env(spec=spec, reset=bind(wrapped.reset, w), step=bind(wrapped.step, w),
              scripted_action=bind(wrapped.scripted_action, w),
              random_action=bind(wrapped.random_action, w),
              avail_actions=bind(wrapped.avail_actions, w) if avail_fn is not None else None,
              state_of=bind(wrapped.state_of, w) if family.state_dim > 0 else None)
    return env, JaxMARLParams(episode_length=jnp.asarray(episode_length, jnp.int32))


def _episode_length(episode_length: int | None, limit: int | None) -> int:
    """Our time limit: ``episode_length`` checked against JaxMARL's ``limit``, or the default."""
    if episode_length is None:
        episode_length = limit if limit is not None else DEFAULT_UNLIMITED_LENGTH
    if not isinstance(episode_length, int) or episode_length < 1 or (
            limit is not None and episode_length > limit):
        bound = f"<= {limit} (JaxMARL's own limit)" if limit is not None else ">= 1"
        raise ValueError(f"episode_length must be an int >= 1 and {bound}, got {episode_length!r}")
    return episode_length


def _spec(name: str, agents: tuple[str, ...], obs_sizes: tuple[int, ...], acts: Actions,
          episode_length: int, family: Family) -> EnvSpec:
    """The wrapped env's spec (module docstring); ``scripted`` only where the family has a
    scripted policy and the actions are discrete."""
    n = len(agents)
    num_actions = 0 if acts.continuous else max(acts.sizes)
    teams = tuple(a.rsplit("_", 1)[0] if a.rsplit("_", 1)[-1].isdigit() else a for a in agents)
    return EnvSpec(
        name=name, num_agents=n, obs_dim=max(obs_sizes), obs_sizes=obs_sizes, teams=teams,
        continuous=acts.continuous, num_actions=num_actions,
        action_sizes=(0,) * n if acts.continuous else acts.sizes,
        act_dim=max(acts.sizes) if acts.continuous else num_actions,
        episode_length=episode_length, shared_reward=family.shared_reward, terminates=True,
        state_dim=family.state_dim, episode_stats=tuple(s for s, _ in family.stats),
        scripted=family.scripted is not None and not acts.continuous)


__all__ = ["PREFIX", "JaxMARLParams", "JaxMARLState", "check_id", "keywords", "make",
           "registered_ids", "wrap"]
