"""The documentation's executable claims: the API examples (doctests) and the Siconos side-by-side.

* Every module of nsopt is imported and the ``>>>`` examples of its docstrings run (``doctest``, with
  ELLIPSIS and NORMALIZE_WHITESPACE): an example that prints something else fails.
* The bouncing ball of the site's "Coming from Siconos" page: the Siconos script
  (``docs/siconos/bouncing_ball_siconos.py``, run by /usr/bin/python3 with siconos.kernel) and the
  nsopt script give the same trajectory (skipped without Siconos).

The site itself (every tutorial cell, every gallery script) is executed by its build (README.md,
"Documentation"), and checked in a browser by ``tests/site/test_browser.py``.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import runpy
import subprocess
from pathlib import Path

import numpy as np
import pytest

import nsopt
from nsopt.exceptions import MissingExtra

from conftest import need_extra

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["nsopt"] + sorted(m.name for m in pkgutil.walk_packages(nsopt.__path__, "nsopt."))

# Docstrings whose examples are known to be wrong, and why (strict: fixing one makes its test fail,
# so the entry is removed then).
KNOWN_WRONG: dict = {}   # module -> why its example is known wrong (strict xfail); none today


def _params():
    out = []
    for name in MODULES:
        marks = [pytest.mark.xfail(reason=KNOWN_WRONG[name], strict=True)] if name in KNOWN_WRONG else []
        out.append(pytest.param(name, id=name, marks=marks))
    return out


def _import(modname):
    """The module; a module of an extra that is not installed (nsopt.jax without JAX: MissingExtra)
    skips naming the extra; any other ImportError (of nsopt's own code) fails the test."""
    try:
        return importlib.import_module(modname)
    except MissingExtra as e:
        need_extra(e.extra)
        raise


def test_an_import_error_of_nsopt_fails_and_a_missing_extra_skips(monkeypatch):
    """issue 31 §9: only a missing extra is a skip (it used to be any ImportError)."""
    with pytest.raises(ModuleNotFoundError):
        _import("nsopt._no_such_module")
    import conftest

    monkeypatch.setattr(conftest, "REQUIRE_EXTRAS", False)
    monkeypatch.setitem(__import__("sys").modules, "jax", None)       # (as if JAX were not installed)
    monkeypatch.delitem(__import__("sys").modules, "nsopt.jax", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r'needs nsopt\[jax\].*pip install "nsopt\[jax\]"'):
        _import("nsopt.jax")


@pytest.mark.parametrize("modname", _params())
def test_docstring_examples(modname):
    if modname.startswith("nsopt.studies") or modname == "nsopt.cli":
        need_extra("studies")         # (their examples make DataFrames and campaigns)
    mod = _import(modname)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    for test in finder.find(mod, modname):
        if test.examples and (test.filename or "").startswith(str(ROOT)):   # not re-exported third-party code
            runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)


def test_docstrings_keep_their_indentation():
    """No line of a function's or class's docstring is indented less than its body: a line that is
    (an example pasted at the wrong depth) shifts numpydoc's sections when the docstring is cleaned."""
    import ast

    bad = []
    for path in sorted((ROOT / "nsopt").rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not node.body:
                continue
            first = node.body[0]
            if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                continue
            depth = node.col_offset + 4
            bad += [f"{path.relative_to(ROOT)}:{i + 1}" for i in range(first.lineno, first.end_lineno)
                    if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) < depth]
    assert not bad, bad


def test_every_registered_method_documents_its_contract():
    """Each registered method's docstring has the numpydoc sections its ``{solve_contract}`` line stands for
    (``registry.SOLVE_CONTRACT_DOC``, written once), and no marker is left."""
    from nsopt import registry

    for kind in registry.kinds():
        for info in registry.for_kind(kind):
            doc = info.func.__doc__ or ""
            assert "{solve_contract}" not in doc, (kind, info.name)
            if "Parameters" in doc:
                assert "mon : nsopt.monitor.Monitor" in doc and "Returns\n" in doc, (kind, info.name)


def _siconos_kernel():
    try:
        r = subprocess.run(["/usr/bin/python3", "-c", "import siconos.kernel"], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def test_siconos_page_bouncing_ball_agrees(tmp_path):
    if not _siconos_kernel():
        pytest.skip("Siconos' kernel is not installed for /usr/bin/python3 (Debian python3-siconos)")
    out = tmp_path / "siconos.npz"
    r = subprocess.run(["/usr/bin/python3", str(ROOT / "docs" / "siconos" / "bouncing_ball_siconos.py"), str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    ref = np.load(out)
    mine = runpy.run_path(str(ROOT / "docs" / "siconos" / "bouncing_ball_nsopt.py"))
    assert len(mine["t"]) == len(ref["t"]) == 401
    # the same scheme with the same LCP at every step: round-off apart (the page shows the numbers)
    for key, scale in (("t", 1.0), ("q", 1.0), ("v", 10.0), ("lam", 10.0)):
        np.testing.assert_allclose(mine[key], ref[key], rtol=0, atol=1e-12 * scale, err_msg=key)
    assert (ref["lam"] > 0).sum() >= 2            # the run has impacts (not a trivially equal free fall)
