"""The share of Siconos' time spent in the consistency checks of its interaction graph (Debian's build keeps
the asserts of kernel/src/utils/SiconosGraph.hpp: ``state_assert``, ``adjacent_vertices_ok``,
``adjacent_vertex_exists``, each a pass over the whole graph, run on every vertex or edge insertion and
removal), from a ``perf record --call-graph dwarf`` of ``siconos_rigid.py``:

    perf record -F 5 --call-graph dwarf,16384 -o pile1000.data \\
        /usr/bin/python3 benchmarks/siconos_rigid.py pile1000 OUT --time-budget 6000
    python benchmarks/siconos_perf_share.py pile1000.data

Counts the samples whose call stack holds one of the check functions (their inclusive share) and, for
reference, the samples in other parts (the one-step solver, the collision detection, Python).
"""

from __future__ import annotations

import collections
import subprocess
import sys

CHECKS = ("::state_assert", "::adjacent_vertices_ok", "::adjacent_vertex_exists")
PARTS = {"graph checks": CHECKS,
         "fc3d solver (numerics)": ("fc3d_", "SBM_", "computeAlartCurnier", "projectionOnCone", "NM_", "dnrm2", "frictionContact"),
         "bullet collision": ("bt", "SiconosBulletCollisionManager", "BulletR"),
         "kernel (other)": ("OneStepNSProblem", "MoreauJeanOSI", "TimeStepping", "Topology", "SiconosGraph", "Interaction",
                            "NewtonEuler", "SiconosVector", "SimpleMatrix", "BlockVector", "ublas"),
         "python": ("_PyEval", "PyObject", "_Py", "Py"),
         }


def shares(data):
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym"], capture_output=True, text=True,
                         errors="replace")
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    total, counts = 0, collections.Counter()
    stack = []

    def flush():
        nonlocal total
        if not stack:
            return
        total += 1
        frames = " ".join(stack)
        for name, keys in PARTS.items():        # first match wins, in this order (checks first)
            if any(k in frames for k in keys):
                counts[name] += 1
                break
        else:
            counts["other"] += 1
        stack.clear()

    for line in out.stdout.splitlines():      # a sample: a "comm" line, then one tab-indented line per frame
        if line.startswith("\t"):
            stack.append(line.strip())
        else:
            flush()
    flush()
    return total, counts


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    total, counts = shares(argv[0])
    print(f"{total} samples")
    for name in list(PARTS) + ["other"]:
        print(f"{name:26s} {counts[name]:8d}  {100 * counts[name] / max(total, 1):5.1f} %")
    return total, counts


if __name__ == "__main__":
    main()
