"""``python -m arithmech.lab``: ``python -m arithmech lab`` (:mod:`arithmech.cli`), the command ``make lab`` runs."""

import sys

from arithmech.cli import main

if __name__ == "__main__":
    sys.exit(main(["lab", *sys.argv[1:]]))
