"""``python -m nsopt``: the ``nsopt`` command line (:mod:`nsopt.cli`)."""

import sys

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
