"""Drawing grid-hunt (``stag_hunt``) states as RGB images (host side, matplotlib's Agg canvas).

:func:`render_hunt` is the renderer (:attr:`~.base.Env.render`) of the envs whose states are
:class:`~.hunt_rules.HuntState`: :func:`~.render.render_frame` and
:func:`~.render.render_rollout` call it, and it draws each step with :func:`draw_hunt`
(matplotlib is imported when a frame is drawn, not with this module). What is drawn on the
``H x W`` grid (row 0 at the top, as the state's ``(row, col)`` cells): agents on the grid
as blue circles with their index, stags as brown triangles, hares as small green circles;
frozen agents and captured prey are not drawn (they have left the grid); the caption gives
the step and the prey captured so far.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.envs.hunt_rules import HuntState
from jaxmarl_accel.envs.render import draw_rollout

if TYPE_CHECKING:
    from matplotlib.figure import Figure

AGENT_COLOR = (0.25, 0.4, 0.85)
STAG_COLOR = (0.55, 0.33, 0.15)
HARE_COLOR = (0.3, 0.7, 0.3)


def render_hunt(states: HuntState, params: Any, spec: EnvSpec, pixels: int = 400,
                extent: float | None = None) -> np.ndarray:
    """The grid hunt's renderer (:attr:`~.base.Env.render`): every step drawn by
    :func:`draw_hunt`, the whole grid in view.

    Args:
      states: hunt states with a leading time axis T (``agent_pos [T, N, 2]``,
        ``prey_pos [T, P, 2]``, ``frozen [T, N]``, ``prey_alive [T, P]``, ``step [T]``).
      params: the env's params (unused).
      spec: the env's spec (its name is the caption's first word).
      pixels: width and height of each image.
      extent: unused (the view is the grid).

    Returns:
      ``[T, pixels, pixels, 3]`` uint8 RGB frames.
    """
    agent_pos = np.asarray(states.agent_pos)
    if agent_pos.ndim != 3:
        raise ValueError("states.agent_pos must be [T, N, 2] (a leading time axis), got "
                         f"{agent_pos.shape}")
    return draw_rollout(states, agent_pos.shape[0], pixels,
                        lambda fig, state: draw_hunt(fig, state, spec.name))


def draw_hunt(fig: Figure, state: HuntState, title: str) -> None:
    """Draws one (unbatched) hunt state on an emptied figure.

    Args:
      fig: the figure (cleared first).
      state: ``agent_pos [N, 2]``, ``prey_pos [P, 2]``, ``frozen [N]``, ``prey_alive [P]``,
        ``step []``, static ``grid_shape (H, W)`` and ``num_stags`` (the first prey).
      title: the caption's first word (the scenario's name).
    """
    from matplotlib.patches import Circle, Polygon, Rectangle

    h, w = state.grid_shape
    agents, prey = np.asarray(state.agent_pos), np.asarray(state.prey_pos)
    frozen, alive = np.asarray(state.frozen), np.asarray(state.prey_alive)
    fig.clear()
    ax = fig.add_axes((0.0, 0.0, 1.0, 0.93))
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(h - 0.5, -0.5)  # row 0 at the top
    ax.set_aspect("equal")
    ax.axis("off")
    ax.add_patch(Rectangle((-0.5, -0.5), w, h, fill=False, ec="black", lw=1.5))
    for r in range(1, h):
        ax.plot([-0.5, w - 0.5], [r - 0.5, r - 0.5], color="0.85", lw=0.6)
    for c in range(1, w):
        ax.plot([c - 0.5, c - 0.5], [-0.5, h - 0.5], color="0.85", lw=0.6)
    for p in np.flatnonzero(alive):
        row, col = prey[p]
        if p < state.num_stags:
            corners = [(col, row - 0.38), (col - 0.36, row + 0.3), (col + 0.36, row + 0.3)]
            ax.add_patch(Polygon(corners, fc=STAG_COLOR, ec="black", lw=0.8))
        else:
            ax.add_patch(Circle((col, row), 0.22, fc=HARE_COLOR, ec="black", lw=0.8))
    for i in np.flatnonzero(~frozen):
        row, col = agents[i]
        ax.add_patch(Circle((col, row), 0.38, fc=AGENT_COLOR, ec="black", lw=1.0))
        ax.text(col, row, str(i), ha="center", va="center", fontsize=7, color="white")
    captured = int(np.sum(~alive))
    fig.text(0.02, 0.985, f"{title}  t={int(np.asarray(state.step))}  captured {captured}/"
             f"{alive.size}  frozen {int(np.sum(frozen))}/{frozen.size}", ha="left", va="top",
             fontsize=9)
