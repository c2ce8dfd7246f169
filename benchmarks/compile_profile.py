"""Where the first run's time goes: the numba kernels ``python -m nsopt`` compiles, with their compile CPU.

    python benchmarks/compile_profile.py [--cold] [--out FILE] [-- ARGS of python -m nsopt]

Runs ``python -m nsopt`` (the demo table, or ``ARGS``) in this process with a listener on numba's
``numba:compile`` events (:mod:`numba.core.event`), and prints per dispatcher the CPU seconds of its
compilation, exclusive (without the callees compiled meanwhile) and inclusive, and how many
signatures it compiled; then the wall and CPU time of the whole run and the sum of the exclusive
times. ``--cold`` first deletes this tree's numba cache (``nsopt/**/*.nbi``, ``*.nbc``), as a fresh
install has it; without it, kernels already cached are loaded, not compiled, and do not appear.
The demo's compile-ahead process (:mod:`nsopt._ahead`) is off unless ``--ahead``: then the table
shows what the run compiled itself while the helper compiled the rest (its critical path).
Times are process CPU (``time.process_time``): on a shared machine the wall time is loose.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from numba.core import event  # noqa: E402


class CompileTimes(event.Listener):
    """Exclusive and inclusive CPU time of each dispatcher's compilations, and their count."""

    def __init__(self):
        self.stack = []
        self.exclusive = defaultdict(float)
        self.inclusive = defaultdict(float)
        self.count = defaultdict(int)

    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        self.stack.append([f"{f.__module__}.{f.__qualname__}", time.process_time(), 0.0])

    def on_end(self, ev):
        name, t0, callees = self.stack.pop()
        dt = time.process_time() - t0
        self.exclusive[name] += dt - callees
        self.inclusive[name] += dt
        self.count[name] += 1
        if self.stack:
            self.stack[-1][2] += dt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cold", action="store_true", help="delete this tree's numba cache first")
    ap.add_argument("--out", help="also write the table to this file")
    ap.add_argument("--ahead", action="store_true",
                    help="let the demo start its compile-ahead process (nsopt._ahead; forced on): the "
                         "table then shows what this process compiled itself, the run's critical path")
    ap.add_argument("args", nargs="*", help="the arguments of python -m nsopt (after --)")
    a = ap.parse_args(argv)
    if a.cold:
        for f in list((ROOT / "nsopt").rglob("*.nbi")) + list((ROOT / "nsopt").rglob("*.nbc")):
            f.unlink()
    os.environ["NSOPT_COMPILE_AHEAD"] = "1" if a.ahead else "0"   # default: every kernel, in this process
    times = CompileTimes()
    event.register("numba:compile", times)
    sys.argv = ["compile_profile"] + a.args       # (not "nsopt": the command would end the process)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        runpy.run_module("nsopt", run_name="__main__")
    except SystemExit:
        pass
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = sorted(times.exclusive.items(), key=lambda kv: -kv[1])
    lines = [f"wall {wall:.1f} s, CPU {cpu:.1f} s, compilation (sum of exclusive) {sum(times.exclusive.values()):.1f} s, "
             f"{len(rows)} dispatchers, {sum(times.count.values())} compilations",
             f"{'excl s':>7} {'incl s':>7} {'sigs':>4}  dispatcher"]
    lines += [f"{t:7.2f} {times.inclusive[n]:7.2f} {times.count[n]:4d}  {n}" for n, t in rows]
    text = "\n".join(lines)
    print(text, file=sys.stderr)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
