"""The light core and its extras (issue 31 §7): ``pyproject.toml``'s optional dependencies and the
import names of ``nsopt._extras.EXTRAS`` agree, and a part used without its extra raises
``nsopt.MissingExtra`` naming the extra where the user first touches it (its import, or the call),
never a bare ModuleNotFoundError from deep inside.

Each extra is also installed alone in a fresh environment and its part's tests run there (the
report of issue 31; ``.ci/run`` runs the README's commands, each in its own environment)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from types import SimpleNamespace

from nsopt._extras import EXTRAS

import _parts

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


# ---------------------------------------------------------------------------- each part alone (.ci/extras)
PART_MODULES = {m: e for e in ("symbolic", "mechanics", "studies", "jax") for m in EXTRAS[e]}


def _module_level(path):
    """(the parts a test module declares at its top, in order, with the imports of parts between them)."""
    declared, late = [], []
    for st in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and _parts._name(st.value) == "need_extra":
            need = _parts._literal_need(st.value)
            assert need is not None, f"{path.name}:{st.lineno}: need_extra with a non-literal extra at the top"
            declared.append(need[0])
        names = ([a.name for a in st.names] if isinstance(st, ast.Import) else
                 [st.module] + [f"{st.module}.{a.name}" for a in st.names]
                 if isinstance(st, ast.ImportFrom) and st.module else [])
        for name in names:
            head = name.split(".")
            part = head[1] if head[0] == "nsopt" and len(head) > 1 and head[1] in _parts.PARTS else \
                PART_MODULES.get(head[0])
            if part and part not in declared and "all" not in declared:
                late.append(f"{path.name}:{st.lineno}: imports {name} before need_extra({part!r})")
    return declared, late


def test_each_test_module_declares_its_part_before_importing_it():
    """A test module of a part says so at its top (``need_extra("mechanics")``: the module's part, which
    .ci/extras reads) before it imports the part or one of its libraries: without the extra it skips naming
    it, instead of failing to import. One part per module (the core: none), and no ``importorskip`` of a
    part (its skip would not name the extra, nor declare the part)."""
    late, several, importorskip = [], [], []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        declared, bad = _module_level(path)
        late += bad
        if len(set(declared) - {"test"}) > 1:
            several.append(f"{path.name}: {declared}")
        for m in re.finditer(r"importorskip\(\s*['\"]([\w.]+)", path.read_text(encoding="utf-8")):
            head = m.group(1).split(".")
            if PART_MODULES.get(head[0]) or (head[0] == "nsopt" and len(head) > 1 and head[1] in _parts.PARTS):
                importorskip.append(f"{path.name}: importorskip({m.group(1)!r})")
    assert not late and not several and not importorskip, (late, several, importorskip)
    # .ci/extras collects, for a part, only the test modules that call need_extra: a fixture of conftest.py
    # needing a part would hide the tests using it there
    fixtures = [f.name for f in ast.parse((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")).body
                if isinstance(f, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in f.decorator_list)
                and any(isinstance(n, ast.Call) and _parts._name(n) in ("need_extra", "need_extras_of")
                        for n in ast.walk(f))]
    assert not fixtures, fixtures


def test_a_module_importing_a_part_before_declaring_it_is_found(tmp_path):
    (tmp_path / "test_x.py").write_text("import pytest\nfrom nsopt import mechanics as mc\n"
                                        "from conftest import need_extra\nneed_extra('mechanics')\n")
    (tmp_path / "test_y.py").write_text("from conftest import need_extra\nneed_extra('symbolic')\nimport sympy\n")
    assert _module_level(tmp_path / "test_x.py") == (
        ["mechanics"], ["test_x.py:2: imports nsopt.mechanics before need_extra('mechanics')"])
    assert _module_level(tmp_path / "test_y.py") == (["symbolic"], [])


def test_what_a_test_needs_is_read_from_its_need_extra_calls():
    body = ast.parse(textwrap.dedent("""
        need_extra("symbolic")
        need_extra("all", ["matplotlib"])
        x = 1
        if x:
            need_extra("studies")
        need_extras_of(code)
    """)).body
    certain, maybe, dynamic = _parts.needs_of_body(body)
    assert certain == [("symbolic", None), ("all", ("matplotlib",))] and maybe == {"studies"} and dynamic
    assert _parts.needs_of_body(ast.parse("need_extra('jax')\ndef f():\n    need_extra('studies')\n").body) == (
        [("jax", None)], set(), False)


def test_the_test_runner_is_tools_of_test_and_no_part():
    """The runner .ci/extras installs beside one extra: requirements of [test], written the same, that
    install no part (a part's module in an environment other than that part's fails the check)."""
    runner = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["nsopt"]["test-runner"]
    assert set(runner) <= set(PYPROJECT["optional-dependencies"]["test"]), runner
    assert {"pytest", "xdist", "hypothesis"} == _names(runner)
    assert not _names(runner) & set(PART_MODULES)


def _report(nodeid, outcome, reason="", when="call", absent=(), dynamic=False, parts=()):
    props = {"absent": list(absent), "dynamic": dynamic, "parts": list(parts)}
    longrepr = ("conftest.py", 1, f"Skipped: {reason}") if outcome == "skipped" else reason or None
    return SimpleNamespace(nodeid=nodeid, when=when, longrepr=longrepr, user_properties=[("nsopt_part", props)],
                           failed=outcome == "failed", skipped=outcome == "skipped", passed=outcome == "passed",
                           outcome=outcome)


def test_the_part_check_fails_each_way_a_part_can_leak():
    """``--part``'s verdict (tests/_parts.py) on reports: a test of an absent part that passes or errors
    instead of skipping naming it, a test of the installed part that skips, a module of an absent part that
    fails to import, no test of the part run: each is a violation; the expected run is clean."""
    def verdict(part, *reports, collect=()):
        check = _parts.PartCheck(part, ROOT)
        for r in reports:
            check.pytest_runtest_logreport(r)
        for c in collect:
            check.pytest_collectreport(c)
        return check.check()[1]

    skip_sym = 'needs nsopt[symbolic] (sympy, mpmath not installed): pip install "nsopt[symbolic]"'
    ok = [_report("t.py::own", "passed", parts=["jax"]),
          _report("t.py::sym", "skipped", skip_sym, when="setup", absent=["symbolic"], parts=["symbolic"]),
          _report("t.py::dyn", "skipped", skip_sym, dynamic=True)]
    assert verdict("jax", *ok) == []
    assert verdict("jax", *ok, _report("t.py::leak", "passed", absent=["symbolic"], parts=["symbolic"]))
    assert verdict("jax", *ok, _report("t.py::err", "failed", "ModuleNotFoundError: sympy",
                                       absent=["symbolic"], parts=["symbolic"]))
    assert verdict("jax", *ok, _report("t.py::own2", "skipped", 'needs nsopt[jax] (jax not installed)', parts=["jax"]))
    assert verdict("jax", *ok[1:]) == ["no test of nsopt.jax ran and passed with nsopt[jax] installed"]
    bad_module = SimpleNamespace(nodeid="tests/test_symbolic_lcs.py", outcome="failed", skipped=False, failed=True,
                                 longrepr="ImportError while importing test module")
    assert verdict("jax", *ok, collect=[bad_module])
    skipped_module = SimpleNamespace(nodeid="tests/test_symbolic_lcs.py", outcome="skipped", skipped=True,
                                     failed=False, longrepr=("conftest.py", 1, f"Skipped: {skip_sym}"))
    assert verdict("jax", *ok, collect=[skipped_module]) == ([] if _parts.missing("symbolic") else
                                                            [("tests/test_symbolic_lcs.py: collection skipped: "
                                                              f"Skipped: {skip_sym}")])
