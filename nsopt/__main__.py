"""``python -m nsopt`` and the ``nsopt`` script: the command line (:mod:`nsopt.cli`).

Run as a command, the process ends with ``os._exit`` once the output is flushed and the exit
handlers have run (the kept campaign workers are stopped): tearing down the interpreter, with
numpy, scipy, numba, pandas and matplotlib loaded, takes longer (~0.3-0.6 s) than most campaigns'
report and leaves nothing to save (every file is closed by then)."""

import os
import sys

from .cli import main as _main

__all__ = ["main"]


def _is_command() -> bool:
    """Whether this process is the ``nsopt`` command (the script, or ``python -m nsopt``)."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name in ("nsopt", "nsopt.exe", "nsopt-script.py") or (
        name == "__main__.py" and os.path.basename(os.path.dirname(sys.argv[0])) == "nsopt")


def exit_now(code: int) -> None:
    """Flush the output, run the exit handlers, end the process without the interpreter's teardown."""
    import atexit

    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError, AttributeError):
            pass
    atexit._run_exitfuncs()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


def main(argv=None) -> int:
    """Entry point of the ``nsopt`` script; returns the exit code when called with ``argv`` (or from
    another program), ends the process when it is the command itself."""
    code = _main(argv)
    if argv is None and _is_command():
        exit_now(code if isinstance(code, int) else 1)
    return code


if __name__ == "__main__":
    sys.exit(main())
