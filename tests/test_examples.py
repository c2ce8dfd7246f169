"""Every script in examples/ runs to completion (they are teaching and validation cases)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script):
    root = str(script.parent.parent)
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env,
                       cwd=script.parent)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]


def test_demo_cli_runs():
    from nsopt.__main__ import main

    assert main(["--methods", "auto"]) == 0
