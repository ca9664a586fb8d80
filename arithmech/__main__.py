"""``python -m arithmech``: the command line (:mod:`arithmech.cli`). A Ctrl-C while its modules load is one line
and exit code 130, as it is once the command runs (:func:`arithmech.cli.main`)."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:
    print("interrupted: nothing had run yet; re-run the same command", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
