"""The one-line progress display of a run on stderr."""

from __future__ import annotations

import math
import sys
import time


class ProgressBar:
    """A one-line progress bar on stderr: env steps per second and time left.

    The time left is estimated from the most recent chunk that learned in all of its
    rounds: chunks of the learning-free warm-up run much faster and would make it far too
    short. Until such a chunk has run, the time left is shown as ``?``.
    """

    def __init__(self, total_steps: int, start_steps: int, quiet: bool) -> None:
        self.total, self.steps, self.quiet = total_steps, start_steps, quiet
        self.last = time.perf_counter()
        self.rate: float | None = None  # env steps per second per seed while learning
        self.open = not quiet

    def update(self, steps: int, seeds: int, eval_return: float, learning: bool) -> None:
        """Draw the bar after a chunk that ended at ``steps`` per seed; ``learning``: the
        chunk updated the learners in every round."""
        now = time.perf_counter()
        rate = (steps - self.steps) / max(now - self.last, 1e-9)
        self.steps, self.last = steps, now
        if learning:
            self.rate = rate
        if self.quiet:
            return
        left = (self.total - steps) / self.rate if self.rate else math.inf
        width, done = 30, steps / self.total
        bar = "#" * int(width * done) + "." * (width - int(width * done))
        print(f"\r[{bar}] {100 * done:5.1f}% {steps:,}/{self.total:,} steps/seed | "
              f"{rate * seeds:,.0f} env steps/s ({rate:,.0f} per seed) | eval {eval_return:.2f}"
              f" | left {duration(left)}   ", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        """End the bar's line (once)."""
        if self.open:
            print(file=sys.stderr)
            self.open = False


def duration(seconds: float) -> str:
    """``1h02m``, ``3m04s`` or ``?`` (not known yet)."""
    if not math.isfinite(seconds):
        return "?"
    minutes, sec = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{sec:02d}s"
