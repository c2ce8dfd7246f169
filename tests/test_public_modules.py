"""``nsopt.solve`` and ``nsopt.sensitivity`` are the module and the package, called as their function
(issue 31 §8): the calls work as before and the modules behind them are importable by every spelling."""

import importlib
import inspect
import subprocess
import sys

import numpy as np

import nsopt


def test_the_calls_and_the_modules():
    p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    s = nsopt.solve(p, method="lemke")
    np.testing.assert_allclose(s.z, [4 / 3, 7 / 3], rtol=1e-12)
    assert nsopt.sensitivity(p, s).kind == "lcp"
    import nsopt.sensitivity.core as core  # noqa: PLR0402  (the spelling that failed)
    import nsopt.solve as solve_module

    assert core is sys.modules["nsopt.sensitivity.core"] is importlib.import_module("nsopt.sensitivity.core")
    assert nsopt.sensitivity.core is core and nsopt.sensitivity.Sensitivity is core.Sensitivity
    assert solve_module is nsopt.solve and nsopt.solve.methods is nsopt.methods
    assert "method" in inspect.signature(nsopt.solve).parameters
    assert "solution" in inspect.signature(nsopt.sensitivity).parameters
    from nsopt import sensitivity, solve

    assert solve(p, method="lemke").success and sensitivity(p, s).kind == "lcp"


def test_import_as_in_a_fresh_interpreter():
    """The spelling that failed (``import nsopt.sensitivity.core as core``: the attribute chain), first
    thing in a new process, as a user's script does."""
    code = ("import nsopt.sensitivity.core as core, nsopt.solve as solve, nsopt.sensitivity.select as sel\n"
            "import nsopt\n"
            "print(core.__name__, solve.__name__, sel.__name__, callable(nsopt.solve))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["nsopt.sensitivity.core", "nsopt.solve", "nsopt.sensitivity.select", "True"]
