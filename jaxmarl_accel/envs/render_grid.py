"""Drawing grid-hunt (``stag_hunt``) states as RGB images (host side, matplotlib's Agg canvas).

:func:`~.render.render_frame` and :func:`~.render.render_rollout` hand
:class:`~.hunt_rules.HuntState` states to :func:`draw_hunt`. What is drawn on the ``H x W``
grid (row 0 at the top, as the state's ``(row, col)`` cells): agents on the grid as blue
circles with their index, stags as brown triangles, hares as small green circles; frozen
agents and captured prey are not drawn (they have left the grid); the caption gives the
step and the prey captured so far.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Polygon, Rectangle

from jaxmarl_accel.envs.hunt_rules import HuntState

AGENT_COLOR = (0.25, 0.4, 0.85)
STAG_COLOR = (0.55, 0.33, 0.15)
HARE_COLOR = (0.3, 0.7, 0.3)


def draw_hunt(fig: Figure, state: HuntState, title: str) -> None:
    """Draws one (unbatched) hunt state on an emptied figure.

    Args:
      fig: the figure (cleared first).
      state: ``agent_pos [N, 2]``, ``prey_pos [P, 2]``, ``frozen [N]``, ``prey_alive [P]``,
        ``step []``, static ``grid_shape (H, W)`` and ``num_stags`` (the first prey).
      title: the caption's first word (the scenario's name).
    """
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
