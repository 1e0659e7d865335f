"""The MPE scenarios' renderer (:attr:`~jaxmarl_accel.envs.base.Env.render`, set by
:func:`~.scenario.build_env`): every step drawn by
:func:`~jaxmarl_accel.envs.render.draw_rollout` on one canvas. Matplotlib is imported when a
frame is drawn, not with this module.

What is drawn (entities are circles of their true radius, ``params.world.size``, filled
with ``params.world.color``):

* agents: a black outline and a team marker at the centre: ``^`` for predators and
  adversaries, ``o`` for prey and good agents, ``s`` for speakers, ``D`` for listeners;
* landmarks (not agents, not colliding): a thin grey outline and an ``x``;
* obstacles (not agents, colliding, e.g. in ``simple_tag``): solid dark grey, no marker;
* goals: a dashed ring around the goal landmark(s) of states that have one (``state.goal``
  not empty: speaker-listener, adversary, push, reference);
* communication: the letter of an agent's strongest symbol (``A`` for symbol 0, ...) above
  it when its comm is non-zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.envs.mpe.core import MPEState, WorldParams
from jaxmarl_accel.envs.render import draw_rollout

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TEAM_MARKERS = {"predator": "^", "adversary": "^", "prey": "o", "agent": "o",
                "speaker": "s", "listener": "D"}
OBSTACLE_COLOR = (0.3, 0.3, 0.3)
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def render_mpe(states: MPEState, params: Any, spec: EnvSpec, pixels: int = 400,
               extent: float | None = None) -> np.ndarray:
    """The MPE scenarios' renderer (:attr:`~jaxmarl_accel.envs.base.Env.render`; module docstring).

    Args:
      states: MPE states with a leading time axis T (``pos [T, E, 2]``, ``vel [T, E, 2]``,
        ``comm [T, N, C]``, ``step [T]``, ``goal [T, G]``).
      params: the scenario's (unbatched) params; ``params.world`` gives sizes, colours and
        colliders.
      spec: the scenario's spec (names the agents' teams).
      pixels: width and height of each image.
      extent: half-width of the square view (default: fits every state).

    Returns:
      ``[T, pixels, pixels, 3]`` uint8 RGB frames.
    """
    pos = np.asarray(states.pos)
    if pos.ndim != 3:
        raise ValueError(f"states.pos must be [T, E, 2] (a leading time axis), got {pos.shape}")
    extent = _camera_extent(pos) if extent is None else extent
    return draw_rollout(states, pos.shape[0], pixels,
                        lambda fig, state: _draw(fig, state, params.world, spec, extent))


def _camera_extent(pos: np.ndarray) -> float:
    """Half-width of a square view that holds every position (at least ``[-1.2, 1.2]``)."""
    return max(1.2, float(np.max(np.abs(pos))) + 0.3)


def _draw(fig: Figure, state: MPEState, world: WorldParams, spec: EnvSpec, extent: float):
    """Draws one (unbatched) state on an emptied figure."""
    from matplotlib.patches import Circle

    pos, comm, goal = np.asarray(state.pos), np.asarray(state.comm), np.asarray(state.goal)
    size, color = np.asarray(world.size), np.clip(np.asarray(world.color), 0.0, 1.0)
    collide = np.asarray(world.collide)
    n = spec.num_agents
    fig.clear()
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-extent, extent)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.add_patch(Circle((0.0, 0.0), 1.0, fill=False, ls=":", lw=0.8, ec="0.8"))
    for e in range(n, pos.shape[0]):  # landmarks and obstacles below the agents
        if collide[e]:
            ax.add_patch(Circle(pos[e], size[e], fc=OBSTACLE_COLOR, ec="black", lw=1.0))
        else:
            ax.add_patch(Circle(pos[e], size[e], fc=color[e], ec="0.4", lw=0.8))
            ax.plot(*pos[e], marker="x", color="0.2", ms=5)
    for g in np.unique(goal):  # none when the state has no goal
        e = n + int(g)
        ring = max(float(size[e]) * 1.8, 0.08)
        ax.add_patch(Circle(pos[e], ring, fill=False, ls="--", lw=1.5, ec="black"))
    for i in range(n):
        ax.add_patch(Circle(pos[i], size[i], fc=color[i], ec="black", lw=1.2, alpha=0.9))
        ax.plot(*pos[i], marker=TEAM_MARKERS.get(spec.teams[i], "o"), color="black",
                ms=4, mfc="white")
        if comm.shape[-1] and np.any(comm[i] != 0):
            symbol = LETTERS[int(np.argmax(comm[i])) % len(LETTERS)]
            ax.text(pos[i, 0], pos[i, 1] + size[i] + 0.04, symbol, ha="center",
                    va="bottom", fontsize=11, weight="bold")
    ax.text(-extent + 0.05, extent - 0.05, f"{spec.name}  t={int(np.asarray(state.step))}",
            ha="left", va="top", fontsize=9)
