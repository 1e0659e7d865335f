"""Drawing MPE and grid-hunt states as RGB images (host side, matplotlib's Agg canvas; no
files, no windows).

:func:`render_frame` draws one state and :func:`render_rollout` a stored rollout (a state
pytree with a leading time axis, e.g. the per-step states of a ``lax.scan``) with one fixed
camera. Writing GIF / PNG files is left to the caller (``experiments/render.py``).
Grid-hunt states (``stag_hunt``'s :class:`~.hunt_rules.HuntState`) are drawn by
:func:`~.render_grid.draw_hunt`; the rest of this docstring is about MPE states.

What is drawn (entities are circles of their true radius, ``params.world.size``, filled
with ``params.world.color``):

* agents: a black outline and a team marker at the centre: ``^`` for predators and
  adversaries, ``o`` for prey and good agents, ``s`` for speakers, ``D`` for listeners;
* landmarks (not agents, not colliding): a thin grey outline and an ``x``;
* obstacles (not agents, colliding, e.g. in ``simple_tag``): solid dark grey, no marker;
* goals: a dashed ring around the goal landmark(s) of scenarios that have one
  (speaker-listener, adversary, push, reference);
* communication: the letter of an agent's strongest symbol (``A`` for symbol 0, ...) above
  it when its comm is non-zero.
"""

from __future__ import annotations

import jax
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.envs.mpe.core import MPEState, WorldParams
from jaxmarl_accel.envs.hunt_rules import HuntState
from jaxmarl_accel.envs.render_grid import draw_hunt

TEAM_MARKERS = {"predator": "^", "adversary": "^", "prey": "o", "agent": "o",
                "speaker": "s", "listener": "D"}
OBSTACLE_COLOR = (0.3, 0.3, 0.3)
GOAL_SCENARIOS = ("simple_speaker_listener", "simple_adversary", "simple_push",
                  "simple_reference")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _camera_extent(pos: np.ndarray) -> float:
    """Half-width of a square view that holds every position (at least ``[-1.2, 1.2]``)."""
    return max(1.2, float(np.max(np.abs(pos))) + 0.3)


def _draw(fig: Figure, state: MPEState, world: WorldParams, spec: EnvSpec, extent: float):
    """Draws one (unbatched) state on an emptied figure."""
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
    if spec.name in GOAL_SCENARIOS and goal.size:
        for g in np.unique(goal):
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


def _canvas(pixels: int) -> tuple[Figure, FigureCanvasAgg]:
    dpi = 100
    fig = Figure(figsize=(pixels / dpi, pixels / dpi), dpi=dpi)
    return fig, FigureCanvasAgg(fig)


def _pixels(canvas: FigureCanvasAgg) -> np.ndarray:
    canvas.draw()
    return np.array(canvas.buffer_rgba())[..., :3]


def render_frame(
    state: MPEState, params, spec: EnvSpec, pixels: int = 400, extent: float | None = None
) -> np.ndarray:
    """Draws one state.

    Args:
      state: an unbatched state (``pos [E, 2]``, ``comm [N, C]``, ``step []``, ``goal [G]``),
        or a grid hunt's (``agent_pos [N, 2]``, ``prey_pos [P, 2]``, ...).
      params: the scenario's params (an MPE world's ``world`` field gives sizes, colours,
        colliders; unused for a grid hunt).
      spec: the scenario's spec (names the agents' teams).
      pixels: width and height of the image.
      extent: half-width of the square view (default: fits the state).

    Returns:
      ``[pixels, pixels, 3]`` uint8 RGB image.
    """
    fig, canvas = _canvas(pixels)
    if isinstance(state, HuntState):
        draw_hunt(fig, state, spec.name)
        return _pixels(canvas)
    extent = _camera_extent(np.asarray(state.pos)) if extent is None else extent
    _draw(fig, state, params.world, spec, extent)
    return _pixels(canvas)


def render_rollout(states: MPEState, params, spec: EnvSpec, pixels: int = 400) -> np.ndarray:
    """Draws every step of a stored rollout with one fixed camera.

    Args:
      states: a state pytree whose leaves have a leading time axis T (``pos [T, E, 2]``,
        or a grid hunt's ``agent_pos [T, N, 2]``).
      params: the scenario's (unbatched) params.
      spec: the scenario's spec.
      pixels: width and height of each image.

    Returns:
      ``[T, pixels, pixels, 3]`` uint8 RGB frames.
    """
    if isinstance(states, HuntState):
        return _render_hunt_rollout(states, spec, pixels)
    pos = np.asarray(states.pos)
    if pos.ndim != 3:
        raise ValueError(f"states.pos must be [T, E, 2] (a leading time axis), got {pos.shape}")
    extent = _camera_extent(pos)
    fig, canvas = _canvas(pixels)
    frames = []
    for t in range(pos.shape[0]):
        state_t = MPEState(pos=pos[t], vel=np.asarray(states.vel)[t],
                           comm=np.asarray(states.comm)[t], step=np.asarray(states.step)[t],
                           goal=np.asarray(states.goal)[t])
        _draw(fig, state_t, params.world, spec, extent)
        frames.append(_pixels(canvas))
    return np.stack(frames)


def _render_hunt_rollout(states: HuntState, spec: EnvSpec, pixels: int) -> np.ndarray:
    """``[T, pixels, pixels, 3]`` uint8 frames of grid-hunt states with a leading time axis."""
    agent_pos = np.asarray(states.agent_pos)
    if agent_pos.ndim != 3:
        raise ValueError("states.agent_pos must be [T, N, 2] (a leading time axis), got "
                         f"{agent_pos.shape}")
    fig, canvas = _canvas(pixels)
    host = jax.tree.map(np.asarray, states)
    frames = []
    for t in range(agent_pos.shape[0]):
        draw_hunt(fig, jax.tree.map(lambda x, t=t: x[t], host), spec.name)
        frames.append(_pixels(canvas))
    return np.stack(frames)
