"""Issue 31 §5 (no process-wide state): the module-level constant tables cannot be changed by anyone
(``types.MappingProxyType``, ``frozenset``, tuple), and the symbolic plug-ins are named after their own code
instead of a process-wide counter (the same relation compiles to the same name, whatever was compiled before)."""

import importlib

import numpy as np
import pytest

TABLES = {
    "nsopt._extras": ["EXTRAS"],
    "nsopt.formulations._base": ["ACCURATE"],
    "nsopt.io": ["_FOLDER_HINT", "_UNSUPPORTED"],
    "nsopt.io.siconos_dat": ["GMP_TYPES", "GMP_IDS", "READERS"],
    "nsopt.reductions.to_lcp": ["TO_LCP"],
    "nsopt.registry": ["OPTIONS", "RENAMED", "_PROBLEM_CLASS"],
    "nsopt.result": ["_SYNONYMS"],
    "nsopt.sensitivity._laws": ["STATE_NAMES"],
    "nsopt.sensitivity.select": ["SELECT_RULES", "_STATE_OF"],
    "nsopt.solvers._conic": ["CLARABEL_STATUS_MAP", "OSQP_STATUS_MAP", "SCS_STATUS_MAP", "CVXPY_STATUS_MAP",
                             "_PRIMAL_INF", "_TOL_OPTS", "_TIME_KEY"],
    "nsopt.solvers.convex": ["_QP"],
    "nsopt.solvers.lzb": ["_ERRORS"],
    "nsopt.solvers.socp_fp": ["_TOL_KEYS"],
    "nsopt.modeling.simulation": ["_BUILDERS"],
    "nsopt.modeling.joints": ["_IDENTITY"],
    "nsopt.solvers.newton": ["_LS_CODES"],
}
EXTRA_TABLES = {    # parts behind an extra
    "nsopt.jax": ["DIFFERENTIABLE", "PIECEWISE_AFFINE"],
    "nsopt.mechanics.scene": ["_PRIMITIVES", "_N_PARAMS", "_JOINTS", "_CONTACT_FIELDS"],
    "nsopt.mechanics.siconos_hdf5": ["_WIDTHS", "_INFO"],
    "nsopt.mechanics.shapes": ["_Z_TO_Y"],
    "nsopt.mechanics.viewer": ["PALETTE"],
    "nsopt.studies.profiles": ["MEASURES", "MARGINS", "METHOD_COLOURS"],
    "nsopt.studies.records": ["COLUMNS"],
    "nsopt.studies.worker": ["_TINY"],
    "nsopt.symbolic._autodiff": ["_UNARY"],
    "nsopt.symbolic.relations": ["KINDS", "_KINKS"],
}


def _cannot_change(table):
    """Every way to change a table in place raises (TypeError/AttributeError; ValueError for an array)."""
    if isinstance(table, np.ndarray):
        with pytest.raises(ValueError):
            table[0] = 1.0
        return
    probes = [lambda: table.__setitem__("x", 1), lambda: table.update({"x": 1}), lambda: table.add("x"),
              lambda: table.append("x"), lambda: table.clear()]
    for probe in probes:
        with pytest.raises((TypeError, AttributeError)):
            probe()
    if hasattr(table, "values"):
        for inner in table.values():
            if isinstance(inner, (dict, list, set)):
                pytest.fail(f"a mutable {type(inner).__name__} inside the table")


@pytest.mark.parametrize("module, name", [(m, n) for m, names in TABLES.items() for n in names])
def test_constant_tables_cannot_be_changed(module, name):
    _cannot_change(getattr(importlib.import_module(module), name))


@pytest.mark.parametrize("module, name", [(m, n) for m, names in EXTRA_TABLES.items() for n in names])
def test_constant_tables_of_the_extras_cannot_be_changed(module, name):
    from nsopt._extras import missing

    extra = module.split(".")[1]            # nsopt.<jax|studies|symbolic>...: the extra of that name
    if missing(extra):
        pytest.skip(f"the [{extra}] extra is not installed")
    _cannot_change(getattr(importlib.import_module(module), name))


def test_a_plugin_is_named_after_its_code_not_a_counter():
    from nsopt._extras import missing

    if missing("symbolic"):
        pytest.skip("the [symbolic] extra is not installed")
    import sympy as sm

    from nsopt.symbolic.relations import compile_plugin

    q = sm.symbols("q0:2")
    first = compile_plugin(sm.Matrix([q[0] * q[1]]), [("q", list(q))], (1,))
    compile_plugin(sm.Matrix([sm.sin(q[0])]), [("q", list(q))], (1,))      # another one in between
    again = compile_plugin(sm.Matrix([q[0] * q[1]]), [("q", list(q))], (1,))
    assert first.fn.__name__ == again.fn.__name__
    assert first(np.array([2.0, 3.0])).tolist() == [6.0]
