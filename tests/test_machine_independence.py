"""Results that must not depend on the CPU: OpenBLAS picks its kernels by CPU (AVX-512 SkylakeX,
AVX2 Haswell/Zen, ...), and kernels of different vector widths sum in different orders, so the last
bits of W r, H v, ... differ from one machine to another. Issue 33: on a Haswell-class CI machine
nsn-fb stalled on BoxesStack1 (error 1.6e-3 after 1000 iterations; solved in 91 on SkylakeX) and a
resting box lost its contacts for a step. ``OPENBLAS_CORETYPE`` forces a kernel set, so each case runs
here in subprocesses under several of them (x86-64 only: the names are OpenBLAS's x86 targets)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need_corpus
from nsopt.data import data_dir

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="OPENBLAS_CORETYPE names x86-64 kernel sets")

# AVX2 and AVX kernel sets: every x86-64 CI machine of this decade runs them (AVX-512 ones need the CPU)
CORES = ("Haswell", "Sandybridge")
TESTS = Path(__file__).parent


def _run(script: str, core: str) -> dict:
    env = {**os.environ, "OPENBLAS_CORETYPE": core, "PYTHONPATH": os.pathsep.join(
        [str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


FB_BOXES = """
import json, nsopt
from nsopt.io import load
p = load({path!r})
s = nsopt.solve(p, method="nsn-fb", tol=1e-8, time_limit=60)
print(json.dumps({{"status": s.status.value, "error": s.error, "nit": s.nit}}))
"""


@pytest.mark.corpus
@pytest.mark.parametrize("core", CORES)
def test_nsn_fb_boxes_stack_on_every_kernel_set(core):
    """nsn-fb on BoxesStack1 (52 contacts) under each kernel set: solved. Before the fix its proximal
    continuation ran on the FB system, whose inner Newton does not converge there, and one run in 15
    (1e-13 relative changes of q, or Haswell's kernels) ended at max_iter with error 1.6e-3; now a
    stalled FB solve continues as nsn-ac."""
    need_corpus()
    path = data_dir() / "fc3d" / "BoxesStack1-i100000-32.hdf5.dat"
    r = _run(FB_BOXES.format(path=str(path)), core)
    assert r["status"] == "solved" and r["error"] <= 1e-8, r


SELECT_BOX = """
import json
import numpy as np
from test_diagnose_select import box_run
lr, qr, mr = box_run("nsgs", T=0.2, select="min-norm")
la, qa, ma = box_run("nsn-fb", T=0.2, select="min-norm", fallback=("nsgs",), max_iter=0, warm_start=False)
print(json.dumps({"dl": float(np.abs(la - lr).max()), "dq": float(np.abs(qa - qr).max()),
                  "fallback": ma.count("nsgs"), "same_steps": [m is None for m in ma] == [m is None for m in mr]}))
"""


@pytest.mark.parametrize("core", CORES)
def test_select_through_the_fallback_on_every_kernel_set(core):
    """The box of tests/test_diagnose_select.py through TimeStepping with a failing first method: the
    fallback's selected solves give the reference's impulses under every kernel set (before the box
    started 1e-9 into the floor, the number of steps with a contact was the CPU's)."""
    r = _run(SELECT_BOX, core)
    assert r["same_steps"] and r["fallback"] >= 1, r
    assert r["dl"] <= 1e-10 and r["dq"] <= 1e-12, r     # (impulses up to 0.3: the selection's accuracy)
