"""Drawing env states as RGB images (host side, matplotlib's Agg canvas; no files, no
windows).

:func:`render_frame` draws one state and :func:`render_rollout` a stored rollout (a state
pytree with a leading time axis, e.g. the per-step states of a ``lax.scan``) with one fixed
camera, both with the env's own renderer (:attr:`~.base.Env.render`):
:func:`~.mpe.render.render_mpe` for the MPE scenarios (set by
:func:`~.mpe.scenario.build_env`), :func:`~.render_grid.render_hunt` for the grid hunt; each
draws its frames with :func:`draw_rollout`. Writing GIF / PNG files is left to the caller
(:func:`jaxmarl_accel.runs.figures.write_gif`). Matplotlib is imported when a frame is
drawn, not with this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import numpy as np

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.types import PyTree

if TYPE_CHECKING:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure


def render_frame(env: Env, state: PyTree, params: PyTree, pixels: int = 400,
                 extent: float | None = None) -> np.ndarray:
    """Draws one state with the env's renderer.

    Args:
      env: the env (its ``render`` draws, its ``spec`` names the agents' teams).
      state: an unbatched state (an MPE state's ``pos [E, 2]``, ``comm [N, C]``, ``step []``,
        ``goal [G]``, or a grid hunt's ``agent_pos [N, 2]``, ``prey_pos [P, 2]``, ...).
      params: the env's params (an MPE world's ``world`` field gives sizes, colours,
        colliders; unused for a grid hunt).
      pixels: width and height of the image.
      extent: half-width of the square view of an MPE state (default: fits the state).

    Returns:
      ``[pixels, pixels, 3]`` uint8 RGB image.
    """
    states = jax.tree.map(lambda leaf: np.asarray(leaf)[None], state)  # a time axis of 1
    return _renderer(env)(states, params, env.spec, pixels, extent)[0]


def render_rollout(env: Env, states: PyTree, params: PyTree, pixels: int = 400) -> np.ndarray:
    """Draws every step of a stored rollout with one fixed camera (the env's renderer).

    Args:
      env: the env (its ``render`` draws).
      states: a state pytree whose leaves have a leading time axis T (``pos [T, E, 2]``,
        or a grid hunt's ``agent_pos [T, N, 2]``).
      params: the env's (unbatched) params.
      pixels: width and height of each image.

    Returns:
      ``[T, pixels, pixels, 3]`` uint8 RGB frames.
    """
    return _renderer(env)(states, params, env.spec, pixels, None)


def _renderer(env: Env) -> Callable[..., np.ndarray]:
    if env.render is None:
        raise ValueError(f"env {env.spec.name!r} cannot be drawn: it has no renderer "
                         "(Env.render is None)")
    return env.render


def draw_rollout(states: PyTree, steps: int, pixels: int,
                 draw: Callable[[Figure, PyTree], None]) -> np.ndarray:
    """Draws ``steps`` frames, ``draw(figure, state_t)`` each on one reused canvas.

    Args:
      states: a state pytree whose leaves have a leading time axis of at least ``steps``.
      steps: T, the number of frames.
      pixels: width and height of each image.
      draw: draws one unbatched state (leaves as NumPy arrays) on an emptied figure.

    Returns:
      ``[T, pixels, pixels, 3]`` uint8 RGB frames.
    """
    fig, canvas = _canvas(pixels)
    host = jax.tree.map(np.asarray, states)
    frames = []
    for t in range(steps):
        draw(fig, jax.tree.map(lambda x, t=t: x[t], host))
        frames.append(_pixels(canvas))
    return np.stack(frames)


def _canvas(pixels: int) -> tuple[Figure, FigureCanvasAgg]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dpi = 100
    fig = Figure(figsize=(pixels / dpi, pixels / dpi), dpi=dpi)
    return fig, FigureCanvasAgg(fig)


def _pixels(canvas: FigureCanvasAgg) -> np.ndarray:
    canvas.draw()
    return np.array(canvas.buffer_rgba())[..., :3]
