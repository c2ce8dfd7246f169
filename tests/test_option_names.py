"""One glossary of option names (issue 31 §8): every option of every registered method is in
``nsopt.registry.OPTIONS`` and means there what the glossary says; the names of nsopt 0.1 that meant
two things or were synonyms (``rho``/``sigma``/``max_ls``/... of newton-fb, ``inner_iter`` of prox,
``scale`` of nsn-fb, ``solver``/``solver_options`` of the convex methods) are accepted for one release
with a DeprecationWarning naming the new name, through one function (``registry.renamed``)."""

import warnings

import numpy as np
import pytest

import nsopt
from nsopt import generate as g
from nsopt import (
    registry,
    solvers,  # noqa: F401  (fills the registry)
)
from nsopt.exceptions import OptionError

ALL = sorted(registry._REGISTRY.items())


@pytest.mark.parametrize("key", [k for k, _ in ALL], ids=[f"{k}-{m}" for k, m in (k for k, _ in ALL)])
def test_every_option_of_every_method_is_in_the_glossary(key):
    info = registry._REGISTRY[key]
    missing = [o for o in info.options if o not in registry.OPTIONS]
    assert not missing, f"{key}: options {missing} are not in nsopt.registry.OPTIONS"
    old = [o for o in info.options if o in registry.RENAMED and registry.RENAMED[o] in info.options]
    assert not old, f"{key}: takes both an old name and its new one: {old}"


def test_the_glossary_covers_the_common_options_and_the_new_names():
    assert set(registry.COMMON) | set(registry.ALIASES) <= set(registry.OPTIONS)
    assert set(registry.RENAMED.values()) <= set(registry.OPTIONS)
    # a name that two methods use in two senses cannot be written into the glossary twice; the
    # synonyms of nsopt 0.1 are gone from every method
    used = {o for _, m in ALL for o in m.options}
    for gone in ("max_ls", "inner_iter", "solver", "solver_options", "beta", "p_exp"):
        assert gone not in used
    # rho is the Alart-Curnier parameter wherever it is taken, sigma a proximal weight
    assert {m.name for _, m in ALL if "rho" in m.options} == {"nsn-ac", "prox", "nsn"}
    assert {m.name for _, m in ALL if "sigma" in m.options} == {"prox"}


def test_register_refuses_an_option_outside_the_glossary():
    with pytest.raises(TypeError, match="glossary"):
        @registry.register("lcp", "test-unnamed-option", "a method whose option the glossary lacks")
        def _m(problem, mon, *, frobnicate=1):
            return None
    assert not registry.has("lcp", "test-unnamed-option")


LCP = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
FC = g.friction_contact(3, dim=3, seed=5)[0]


@pytest.mark.parametrize("problem,method,old,new,value", [
    (LCP, "newton-fb", "sigma", "armijo", 1e-3),
    (LCP, "newton-fb", "beta", "backtrack_factor", 0.7),
    (LCP, "newton-fb", "rho", "descent_coef", 1e-7),
    (LCP, "newton-fb", "p_exp", "descent_exp", 2.2),
    (LCP, "newton-fb", "max_ls", "max_backtracks", 20),
    (LCP, "qp", "solver", "backend", "SCS"),
    (LCP, "qp", "solver_options", "backend_options", {"eps_abs": 1e-9}),
    (FC, "prox", "inner_iter", "local_max_iter", 12),
    (FC, "nsn-fb", "scale", "fb_scale", 2.0),
    (FC, "socp-fp", "solver", "backend", "SCS"),
])
def test_old_names_warn_and_mean_the_new_ones(problem, method, old, new, value):
    """The old name gives the new name's solve (same iterate), with a DeprecationWarning that names
    the new one and points at the caller's line."""
    kw = {"backend": "SCS"} if old == "solver_options" else {}
    ref = nsopt.solve(problem, method=method, tol=1e-8, **kw, **{new: value})
    with pytest.warns(DeprecationWarning, match=f"'{old}' is renamed '{new}'") as rec:
        s = nsopt.solve(problem, method=method, tol=1e-8, **kw, **{old: value})
    assert rec[0].filename == __file__
    assert s.status == ref.status and s.nit == ref.nit
    x = problem.primal
    np.testing.assert_array_equal(getattr(s, x), getattr(ref, x))
    with pytest.raises(OptionError, match=f"'{old}' is the old name of '{new}'"):
        nsopt.solve(problem, method=method, **kw, **{old: value, new: value})


def test_old_names_through_auto_and_the_formulations():
    with pytest.warns(DeprecationWarning, match="'max_ls' is renamed 'max_backtracks'"):
        s = nsopt.solve(LCP, max_ls=30)
    assert s.success
    from nsopt.formulations import FCasSOCP, LCPasQP

    with pytest.warns(DeprecationWarning, match="'solver' is renamed 'backend'") as rec:
        f = LCPasQP(LCP, solver="SCS")
    assert rec[0].filename == __file__ and f.backend == "SCS"
    with pytest.warns(DeprecationWarning, match="renamed Formulation.backend_options"):
        assert f.solver_options == f.backend_options
    with pytest.warns(DeprecationWarning, match="'solver_options' is renamed 'backend_options'"):
        assert FCasSOCP(FC, solver_options={"max_iter": 50}).backend_options["max_iter"] == 50
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FCasSOCP(FC, backend="CLARABEL", backend_options={"max_iter": 50})      # the new names: silent


def test_an_old_name_a_method_still_means_otherwise_is_not_renamed():
    """``rho`` is nsn-ac's Alart-Curnier parameter: given there it is not newton-fb's descent_coef."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nsopt.solve(FC, method="nsn-ac", rho=1.0, tol=1e-10).success
        assert nsopt.solve(FC, method="prox", sigma=0.1, tol=1e-10).success
    with pytest.raises(OptionError, match="unknown option"):
        nsopt.solve(LCP, method="lemke", rho=1.0)


@pytest.mark.parametrize("bad", [{"armijo": 0.0}, {"armijo": 1.0}, {"backtrack_factor": 1.5},
                                 {"descent_coef": -1.0}, {"descent_exp": "x"}, {"max_backtracks": 0},
                                 {"max_backtracks": True}])
def test_newton_fb_options_are_checked(bad):
    with pytest.raises(OptionError, match=f"newton-fb: {next(iter(bad))}"):
        nsopt.solve(LCP, method="newton-fb", **bad)


def test_a_campaign_spec_with_an_old_name_passes_the_cli_check():
    """``nsopt compare --methods "qp[solver=SCS]"`` (nsopt 0.1's spelling) is checked as ``backend``; an
    unknown name is still a usage error."""
    from nsopt import cli

    cli._check_method_options([("qp", {"solver": "SCS"}), ("newton-fb", {"max_ls": 5})])
    with pytest.raises(cli.UsageError, match="unknown option"):
        cli._check_method_options([("qp", {"no_such_option": 1})])
