"""``python -m experiments.characterize``: see :mod:`experiments.characterize.cli`."""

from experiments.characterize.cli import main

if __name__ == "__main__":
    main()
