"""nsopt reads cvxpy and SymPy through their public API (issue 31 §8): Clarabel's cones from the documented
fields of ``get_problem_data``'s ``dims`` (not cvxpy's ``dims_to_solver_cones``), Kane's general form from
``KanesMethod``'s public matrices (not ``_fr``, ``_frstar``, ``_f_k``, ...). The one exception, the
constraints SymPy 1.14 keeps only privately on a KanesMethod, is read in one helper
(``nsopt.symbolic.linearization._kane_constraints``)."""

import ast
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1] / "nsopt"

# the private attributes of SymPy's KanesMethod / LagrangesMethod / Linearizer nsopt read before
SYMPY_PRIVATE = {"_fr", "_frstar", "_f_k", "_k_kqdot", "_k_ku", "_f_d", "_k_d", "_f_dnh", "_k_dnh", "_uaux",
                 "_qdot", "_udot", "_qd", "_ud", "_qd_dup", "_hol_coneqs", "_f_h", "_f_nh", "_k_nh", "_qdep",
                 "_udep"}
ALLOWED_IN = {"_kane_constraints"}      # the one reader of the constraints (see the module docstring)


def _functions_and_nodes(tree):
    """(enclosing function name or None, node) for every node."""
    out = []

    def walk(node, fn):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else fn
            out.append((name, child))
            walk(child, name)
    walk(tree, None)
    return out


def test_no_private_cvxpy_or_sympy_api():
    bad = []
    for f in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for fn, node in _functions_and_nodes(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cvxpy.reductions"):
                bad.append(f"{f.relative_to(ROOT.parent)}:{node.lineno} from {node.module} import ...")
            if (isinstance(node, ast.Attribute) and node.attr in SYMPY_PRIVATE and fn not in ALLOWED_IN
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                bad.append(f"{f.relative_to(ROOT.parent)}:{node.lineno} .{node.attr} (in {fn})")
    assert not bad, "non-public cvxpy/SymPy API:\n" + "\n".join(bad)


def test_clarabel_cones_are_cvxpys():
    """The cones built from the public ``dims`` are those cvxpy's own Clarabel interface builds (the
    reference), on the SOCP of a friction problem and on a box QP."""
    pytest.importorskip("cvxpy")
    pytest.importorskip("clarabel")
    from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import dims_to_solver_cones

    import nsopt
    from nsopt import generate as g
    from nsopt.formulations import FCasSOCP, LCPasQP
    from nsopt.solvers._conic import clarabel_cones

    for form in (FCasSOCP(g.friction_contact(4, dim=3, seed=1)[0]), LCPasQP(g.lcp(5, seed=2)[0])):
        data, _, _ = form.program.get_problem_data("CLARABEL")
        mine, ref = clarabel_cones(data["dims"]), dims_to_solver_cones(data["dims"])
        assert [repr(c) for c in mine] == [repr(c) for c in ref] and len(mine) >= 1
    # and the direct path solves through them (against CVXPY's own chain)
    p = g.friction_contact(3, dim=3, seed=4)[0]
    a = nsopt.solve(p, method="socp-fp", direct=True)
    b = nsopt.solve(p, method="socp-fp", direct=False)
    assert a.success and b.success and np.allclose(a.r, b.r, atol=1e-7)
