"""The seed-width probe: deterministic at a fixed width, a float-rounding difference at most
between widths, one-line errors for bad flags."""

import json

import pytest

from experiments import seed_width


@pytest.mark.slow
def test_tiny_probe_is_deterministic_per_width_and_differs_only_by_rounding(tmp_path):
    path = tmp_path / "width.json"
    result = seed_width.main(["--agents", "2", "--chunks", "1", "--chunk-steps", "1600",
                              "--batch-size", "4", "--widths", "1", "2", "--json", str(path)])
    assert json.loads(path.read_text()) == result
    for kind in ("update", "run"):
        assert result["repeat_width_1"][kind] == {"leaves_differing": 0,
                                                  "max_abs_difference": 0.0}
    # one update of identical copies agrees with the unbatched width to float rounding
    assert result["widths"]["2"]["update"]["max_abs_difference"] < 1e-6
    assert result["widths"]["2"]["run"]["max_abs_difference"] < 1e-2


@pytest.mark.parametrize("flags, message", [
    (["--agents", "0"], "--agents must be at least 1"),
    (["--widths", "0", "2"], "--widths must be at least 1"),
    (["--algo", "maddpg"], "invalid choice"),
])
def test_bad_flags_give_one_line_errors(capsys, flags, message):
    with pytest.raises(SystemExit):
        seed_width.parse(flags)
    assert message in capsys.readouterr().err
