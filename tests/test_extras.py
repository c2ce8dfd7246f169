"""The light core and its extras (issue 31 §7): ``pyproject.toml``'s optional dependencies and the
import names of ``nsopt._extras.EXTRAS`` agree, and a part used without its extra raises
``nsopt.MissingExtra`` naming the extra where the user first touches it (its import, or the call),
never a bare ModuleNotFoundError from deep inside.

Each extra is also installed alone in a fresh environment and its part's tests run there (the
report of issue 31; ``.ci/run`` runs the README's commands, each in its own environment)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from nsopt._extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

# distribution name (as pyproject spells it) -> the module nsopt imports
MODULE = {"dask": "distributed", "pytest-xdist": "xdist"}
CORE = {"numpy", "scipy", "numba", "cvxpy", "osqp", "scs", "clarabel", "h5py"}


def _names(requirements):
    out = set()
    for r in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower()
        if name == "nsopt":         # nsopt[a,b]: the extras it names
            for e in re.search(r"\[(.*)\]", r).group(1).split(","):
                out |= _names(PYPROJECT["optional-dependencies"][e.strip()])
        else:
            out.add(MODULE.get(name, name))
    return out


def test_the_core_is_what_the_main_job_needs():
    assert _names(PYPROJECT["dependencies"]) == CORE


def test_every_extra_installs_the_modules_its_check_names():
    extras = PYPROJECT["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        assert set(modules) == _names(extras[extra]) - ({"nsopt"} if extra != "test" else _names(extras["all"])), extra
    assert _names(extras["all"]) == set().union(*(EXTRAS[e] for e in ("symbolic", "mechanics", "studies", "jax")))
    assert _names(extras["docs"]) >= _names(extras["all"])          # the site runs every part
    assert _names(extras["test"]) >= _names(extras["all"])          # nothing skips for a missing part


_MISSING = textwrap.dedent("""
    import sys
    absent = sys.argv[1].split(",")
    for m in absent:
        sys.modules[m] = None              # as if not installed
    import nsopt
    from nsopt import generate
    touches = {
        "symbolic": lambda: nsopt.symbolic,
        "mechanics": lambda: __import__("nsopt.mechanics"),
        "jax": lambda: __import__("nsopt.jax"),
        "studies": lambda: nsopt.studies.compare([generate.lcp(3, seed=1)[0]], "lemke", out=None),
        "progress": lambda: _progress(),
    }

    def _progress():
        from nsopt import modeling as nm
        ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
        nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=0.01)
        nsds.insert_dynamical_system(ball) if hasattr(nsds, "insert_dynamical_system") else None
        nsds.link(nm.Interaction(nm.NewtonImpactNSL(e=0.5), nm.LagrangianLinearTIR(H=[[1.0]])), ball)
        nm.TimeStepping(nsds, h=0.005).run(progress=True)

    try:
        touches[sys.argv[2]]()
        print("no error")
    except nsopt.MissingExtra as e:
        print(type(e).__name__, isinstance(e, ImportError), e.extra, "|", e)
""")


def _touch(part, absent):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", _MISSING, ",".join(absent), part], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip().splitlines()[-1]


def test_a_part_without_its_extra_says_which_to_install():
    for part, absent, extra in [("symbolic", ["sympy"], "symbolic"), ("mechanics", ["coal"], "mechanics"),
                                ("jax", ["jax"], "jax"), ("studies", ["pandas", "distributed"], "studies"),
                                ("progress", ["tqdm"], "mechanics")]:
        out = _touch(part, absent)
        assert out.startswith(f"MissingExtra True {extra} | "), (part, out)
        assert f'pip install "nsopt[{extra}]"' in out and absent[0] in out, (part, out)
