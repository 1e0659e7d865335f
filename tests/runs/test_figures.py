"""A run's pictures: the learning curve, each evaluation marked when there are few, the
title's seeds."""

from __future__ import annotations

from jaxmarl_accel.runs import figures


def test_few_evaluations_are_marked_on_the_curve():
    import matplotlib.pyplot as plt

    one = [{"env_steps": 3200, "eval_return": 0.5}]
    fig = figures.curve_figure(one, "t", 0.0, 1.0)
    assert fig.axes[0].lines[0].get_marker() == "o"
    plt.close(fig)
    many = [{"env_steps": 100 * i, "eval_return": float(i)}
            for i in range(figures.MARKED_POINTS + 1)]
    fig = figures.curve_figure(many, "t", 0.0, None)
    assert fig.axes[0].lines[0].get_marker() in (None, "None", "")
    plt.close(fig)


def test_the_title_counts_seeds_in_the_singular_and_plural():
    assert figures.curve_title("qmix", "stag_hunt", 1) == "qmix on stag_hunt (1 seed)"
    assert figures.curve_title("matd3", "simple_spread", 2) == "matd3 on simple_spread (2 seeds)"
