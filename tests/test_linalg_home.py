"""Every factorisation in nsopt goes through :mod:`nsopt.linalg` (issue 31 §1): an AST scan of
``nsopt/`` for the factorisation routines of SciPy and NumPy called outside ``linalg.py``; the calls
left elsewhere are listed below, each with the reason it is not a factorisation kept for solves."""

import ast
import pathlib

import nsopt

ROOT = pathlib.Path(nsopt.__file__).parent

FACTORISATIONS = {"lu_factor", "lu_solve", "lu", "splu", "spilu", "factorized", "cho_factor", "cho_solve",
                  "cholesky", "inv", "ldl", "dgetrf", "dgetrs", "dgecon", "dpotrf", "dpotrs", "getrf", "potrf"}

# (file relative to nsopt/, routine): why it is not a factorisation to move into nsopt.linalg
ALLOWED = {
    ("formulations/_base.py", "splu"): "a sparse positive-definiteness test (SuperLU in symmetric mode, diagonal "
                                       "pivots only: the signs of the pivots), nothing solved",
    ("modeling/newton_euler.py", "inv"): "the batched inverse of 3x3 body inertias, stored as the inverse mass",
    ("symbolic/linearization.py", "inv"): "|M^-1| entrywise, in a bound on the rounding error, not a solve",
    ("symbolic/linearization.py", "lu"): "|L||U| (P, L, U explicit) in the same bound, not a solve",
}


def _calls():
    """(file, routine, line) of every call of a factorisation routine outside linalg.py."""
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "linalg.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("scipy", "numpy"):
                imported |= {a.asname or a.name for a in node.names if a.name in FACTORISATIONS}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in FACTORISATIONS:
                base = ast.unparse(f.value)
                if "linalg" in base or base in ("sla", "spla", "la", "lapack", "sla.lapack", "np", "scipy"):
                    out.append((rel, f.attr, node.lineno))
            elif isinstance(f, ast.Name) and f.id in imported:
                out.append((rel, f.id, node.lineno))
    return out


def test_every_factorisation_goes_through_linalg():
    stray = [f"{rel}:{line} {name}" for rel, name, line in _calls() if (rel, name) not in ALLOWED]
    assert not stray, "factorisations outside nsopt.linalg (use nsopt.linalg, or allow-list with a reason):\n" + \
        "\n".join(stray)


def test_allow_list_is_current():
    found = {(rel, name) for rel, name, _ in _calls()}
    assert set(ALLOWED) <= found, f"allow-listed but gone: {sorted(set(ALLOWED) - found)}"


def test_scan_finds_a_factorisation(tmp_path, monkeypatch):
    """The scan sees the three spellings (module attribute, lapack routine, imported name)."""
    pkg = tmp_path / "nsopt"
    pkg.mkdir()
    (pkg / "m.py").write_text("import numpy as np\nimport scipy.linalg as sla\nfrom scipy.sparse.linalg import splu\n"
                              "np.linalg.inv(a)\nsla.lapack.dgetrf(a)\nsplu(a)\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", pkg)
    assert sorted(n for _, n, _ in _calls()) == ["dgetrf", "inv", "splu"]
