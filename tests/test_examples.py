"""Every script in examples/ runs to completion (they are teaching and validation cases)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need_extra, need_extras_of

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    """Runs to completion, writes its figures to $NSOPT_FIGURES (here a temporary folder) and
    nothing into the repository's examples/ folder."""
    need_extras_of(script.read_text(encoding="utf-8"))
    root = str(script.parent.parent)
    env = dict(os.environ, MPLBACKEND="Agg", NSOPT_FIGURES=str(tmp_path),
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    before = _tracked(script.parent)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env,
                       cwd=script.parent)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "local error estimate" not in r.stderr, r.stderr[-3000:]     # every step follows its motion
    assert _tracked(script.parent) == before, "the example wrote into examples/"
    if "savefig" in script.read_text(encoding="utf-8"):
        assert list(tmp_path.glob("*.png")), "the example draws a figure but wrote none to $NSOPT_FIGURES"


@pytest.mark.parametrize("script", [p for p in EXAMPLES if not p.name.startswith("_")],
                         ids=[p.name for p in EXAMPLES if not p.name.startswith("_")])
def test_example_has_a_gallery_title(script):
    """The docstring opens with a title underlined by '=' (sphinx-gallery links an example by it; without
    one the site's -W build fails on an untitled toctree entry)."""
    import ast

    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")), clean=False) or ""
    lines = doc.splitlines()
    assert len(lines) >= 2 and lines[0].strip() and set(lines[1].strip()) == {"="}, lines[:2]
    assert len(lines[1].strip()) >= len(lines[0].strip()), "the underline is shorter than the title"


STILL_THUMBNAILS = {"rigid_ramp.py", "rigid_gripper.py"}     # a rigid-body scene's still as the thumbnail


@pytest.mark.parametrize("script", [p for p in EXAMPLES if not p.name.startswith("_")],
                         ids=[p.name for p in EXAMPLES if not p.name.startswith("_")])
def test_example_draws_the_figure_of_its_gallery_page(script):
    """Every gallery example draws a figure (its page's picture and thumbnail; a script without one
    shows the placeholder thumbnail, issue 29 §1); the rigid-body examples show their scene's still
    as the first figure and take it as the thumbnail."""
    text = script.read_text(encoding="utf-8")
    assert "savefig(" in text, "no figure: the gallery shows a placeholder thumbnail"
    if script.name in STILL_THUMBNAILS:
        assert "show_still(" in text and "# sphinx_gallery_thumbnail_number = 1" in text
        assert text.index("show_still(") < text.index("savefig("), "the still is not the first figure"


def _tracked(folder):
    """Files of examples/ with their modification times (not caches, not the figures folder)."""
    return {(p.name, p.stat().st_mtime_ns) for p in folder.iterdir()
            if p.is_file() and p.suffix not in (".pyc",)}


def test_demo_cli_runs():
    from nsopt.__main__ import main

    assert main(["--methods", "auto"]) == 0


# ----------------------------------------------------------------------------- modeling examples: their numbers
import importlib  # noqa: E402

import numpy as np  # noqa: E402

from nsopt import Status  # noqa: E402


def _example(name):
    path = Path(__file__).resolve().parent.parent / "examples"
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    return importlib.import_module(name)


def _solved(statuses):
    return all(s is None or s is Status.SOLVED for s in statuses)


def test_example_bouncing_ball_apex_and_restitution():
    r = _example("modeling_bouncing_ball").simulate()
    ratios = r["apex"][1:5] / r["apex"][:4]
    assert np.all(np.abs(ratios - 0.81) < 0.01), ratios          # e² per bounce, to the step's resolution
    assert np.allclose(r["restitution"][:5], 0.9, rtol=1e-10)    # -v⁺/v⁻ = e exactly at impact steps
    assert _solved(r["status"])


def test_example_vibrating_plate_newton_law_on_relative_velocity():
    r = _example("modeling_vibrating_plate").simulate(T=1.0)
    hit = np.flatnonzero(r["lam"][1:] > 1e-12) + 1
    assert len(hit) > 10
    # ẏ_{k+1} = -e ẏ_k at every step with an impulse (the rheonomous ∂h/∂t included)
    assert np.allclose(r["ydot"][hit], -0.5 * r["ydot"][hit - 1], atol=1e-9)
    assert r["gap"].min() > -1e-3          # penetration bounded by one step's relative motion
    assert _solved(r["status"])


def test_example_inclined_plane_stick_and_slide():
    ex = _example("modeling_inclined_plane")
    stick = ex.simulate(30.0, 0.7)                       # tan 30° = 0.577 <= 0.7: sticks
    assert np.abs(stick["s"]).max() < 1e-10 and np.abs(stick["n"]).max() < 1e-10
    slide = ex.simulate(30.0, 0.3)                       # slides with a = g (sin α - μ cos α)
    a = 9.81 * (np.sin(np.radians(30)) - 0.3 * np.cos(np.radians(30)))
    assert np.allclose(slide["s"], 0.5 * a * slide["t"] ** 2, rtol=1e-8, atol=1e-12)
    assert np.abs(slide["n"]).max() < 1e-10
    r = slide["r"][1:]
    assert np.allclose(np.abs(r[:, 1]), 0.3 * r[:, 0], rtol=1e-8)   # on the boundary of the cone
    assert _solved(slide["status"]) and _solved(stick["status"])


def test_example_slider_crank_energy_and_impacts():
    r = _example("modeling_slider_crank").simulate(T=1.0)
    assert r["newton"].all()
    hit = np.flatnonzero(r["lam"] > 0)
    assert len(hit) >= 2
    for k in hit:                                         # one contact, one dof: E⁺ ≈ e² E⁻
        assert r["energy"][k] / r["energy"][k - 1] == pytest.approx(r["e"] ** 2, rel=0.02)
    # between impacts the (first-order in M(q)) scheme keeps the kinetic energy within 5%
    E = r["energy"]
    seg = E[hit[0] + 1:hit[1] - 1]
    assert np.ptp(seg) / seg.mean() < 0.05
    assert r["gap"].min() > -1e-3
    assert _solved(r["status"])


def test_example_diode_bridge_rectifies_and_dissipates():
    r = _example("modeling_diode_bridge").simulate(T=2e-3)
    assert r["i_R"].min() >= -1e-9                         # the bridge rectifies
    dE = np.diff(r["energy"])
    # θ = 1/2 keeps the LC energy, the diodes only dissipate: non-increasing up to 1e-8 relative per step
    # (a few switching steps gain ~3e-9 relative, as Siconos' scheme does, whose trajectory this matches)
    assert np.all(dE <= 1e-8 * r["energy"][0])
    assert r["energy"][-1] < 0.5 * r["energy"][0]
    y, lam = r["y"][1:], r["lam"][1:]
    assert y.min() >= -1e-9 and lam.min() >= -1e-9 and np.abs(y * lam).max() < 1e-9
    assert _solved(r["status"])


def test_example_relay_sliding_mode():
    r = _example("modeling_relay_sliding").simulate()
    slide = np.flatnonzero(np.abs(r["sigma"]) < 1e-9)
    assert slide.size > 0 and slide[0] < len(r["t"]) // 2
    k0 = slide[0]
    assert np.all(np.abs(r["sigma"][k0:]) < 1e-9)             # stays on σ = 0
    assert np.all(np.abs(r["lam"][k0 + 1:]) < 1 - 1e-6)       # equivalent control, strictly inside the relay
    c, h, x = r["c"], r["h"], r["x"][:, 0]
    factor = (1 - c * h / 2) / (1 + c * h / 2)                # trapezoidal rule on ẋ = -c x
    assert np.allclose(x[k0 + 2:] / x[k0 + 1:-1], factor, rtol=1e-8)


def test_example_compliant_contact_rests_on_the_spring():
    r = _example("modeling_compliant_contact").simulate()
    assert r["q"][-1] == pytest.approx(r["rest"], rel=1e-6)
    assert r["force"][-1] == pytest.approx(r["weight"], rel=1e-6)
    assert r["force"].min() >= -1e-9
    assert _solved(r["status"])


def test_example_spheres_box_fclib_round_trip(tmp_path):
    from nsopt import io, solve

    r = _example("modeling_spheres_box").simulate(6, T=0.2, write_problems=tmp_path)
    assert _solved(r["status"])
    assert r["cone_violation"].max() <= 0.0                 # reactions in the friction cones
    assert r["min_gap"].min() > -0.1 * 0.05                 # penetration below 10% of the radius
    files = sorted(tmp_path.glob("step_*.hdf5"))
    assert len(files) == len(r["solutions"]) > 0
    k, problem, lam = r["solutions"][-1]
    back = io.load(tmp_path / f"step_{k:06d}.hdf5")
    assert back.kind == "fc3d" and back.nc == problem.nc
    assert np.allclose(np.asarray(back.q), problem.q) and np.allclose(back.mu, problem.mu)
    W1 = back.W.toarray() if hasattr(back.W, "toarray") else np.asarray(back.W)
    W0 = problem.W.toarray() if hasattr(problem.W, "toarray") else np.asarray(problem.W)
    assert np.allclose(W1, W0, rtol=0, atol=1e-14 * np.abs(W0).max())
    assert back.error(lam) <= 1e-8                          # the stored step's reactions solve the read-back problem
    assert solve(back, method="nsn-ac", tol=1e-8).success
    from nsopt.exceptions import OutputError

    with pytest.raises(OutputError, match="already holds 'step_000001.hdf5'"):   # a second run does not overwrite
        _example("modeling_spheres_box").simulate(6, T=0.2, write_problems=tmp_path)


def test_example_spheres_box_script_writes_the_corpus(tmp_path, capsys):
    """``python examples/modeling_spheres_box.py --fclib DIR``: the README's way to the FCLIB corpus (the
    test used a private attribute of TimeStepping, the script wrote none)."""
    need_extra("all", ["matplotlib"])     # (the script draws its figure)
    from nsopt import io

    _example("modeling_spheres_box").main(["--fclib", str(tmp_path / "corpus")])
    files = sorted((tmp_path / "corpus").glob("step_*.hdf5"))
    assert len(files) > 100 and f"{len(files)} FCLIB files in" in capsys.readouterr().out
    assert io.load(files[-1]).kind == "fc3d"


# ----------------------------------------------------------------------------- differentiable time stepping (issue 21)
def test_example_identify_contact_recovers_e_and_mu():
    ex = _example("identify_contact")
    r = ex.identify(ex.measurements())
    h = r["history"]
    assert abs(r["e"] - 0.7) < 3e-3 and abs(r["mu"] - 0.25) < 3e-3        # the true values, to the noise's effect
    assert r["loss"] <= 1.05 * 2 * ex.NOISE ** 2 and h[0, 0] > 1e3 * r["loss"]   # down to the noise level
    assert np.all(np.diff(h[:, 0]) <= 0)                                   # descent: every iterate lowers the loss


def test_example_plan_bounce_lands_in_the_target():
    ex = _example("plan_bounce")
    r = ex.plan()
    assert r["miss"] <= 1e-3 and r["impacts"] == 1 and len(r["iterates"]) <= 6
    assert [it[2] for it in r["iterates"]] == sorted((it[2] for it in r["iterates"]), reverse=True)
    # the discrete branch's derivative and the one with the impact time, at v0 = (3, 4): x_N = 3.6 - 0.96 v0_x
    # for the continuous trajectory (the wall hit at t = 2 / v0_x, then 0.8 v0_x back)
    traj, _, _ = ex.simulate(np.array([3.0, 4.0]))
    branch = traj.jacobian(["v0"])["v0"]
    timed = traj.jacobian(["v0"], impact_times=True)["v0"]
    assert branch[0, 0] == pytest.approx(0.2415, abs=1e-4) and timed[0, 0] == pytest.approx(-0.96, abs=5e-3)


def test_example_spheres_box_is_differentiable_through_contact_detection():
    """The box with its contact detection (interactions linked and removed every 5 steps, sphere
    pairs vectorized): the replay reproduces every recorded step (else a ModelingError), and the
    adjoint equals the forward sweep to round-off."""
    from nsopt import modeling as nm

    ex = _example("modeling_spheres_box")
    box = ex.Box(4, T=0.1)
    sim = nm.TimeStepping(box.nsds, 2e-3, nm.MoreauJeanOSI(0.5), osns="fc3d", method="nsn-ac", tol=1e-12,
                          differentiable=True)
    while sim.has_next_step():
        if sim.k % 5 == 0 and sim.k > 0:
            box.detect(sim)
        sim.step()
    traj = sim.trajectory
    sl = traj.dofs(box.spheres[0])

    def height(Q, V):
        gQ = np.zeros_like(Q)
        gQ[-1, sl.start + 2] = 1.0
        return Q[-1, sl.start + 2], gQ, None

    g = traj.gradient(height, wrt=["mu", "v0"])
    dQ, _ = traj.jvp({"mu": 1.0})
    assert abs(dQ[-1, sl.start + 2] - g["mu"]) <= 1e-12 * max(1.0, abs(g["mu"]))
    assert g.report.contact_steps == 50 and np.isfinite(g["v0"]).all()


# ----------------------------------------------------------------------------- rigid bodies (issue 23 §5)
def test_example_rigid_ramp_slides_at_the_coulomb_acceleration_and_rests_flat():
    """On the ramp the box slides flat at g(sin α - μ cos α) (Coulomb, μ < tan α): the fitted acceleration to 1e-3
    relative, its centre at half a side above the ramp to the scheme's penetration; it ends at rest on the floor,
    flat, every step solved."""
    need_extra("mechanics")
    import math

    ex = _example("rigid_ramp")
    run, start, down, normal = ex.simulate(T=2.5)
    assert not run.failed_steps
    t, s, s_exact, lift = ex.sliding_phase(run, start, down, normal)
    a = ex.G * (math.sin(ex.ALPHA) - ex.MU * math.cos(ex.ALPHA))
    assert len(t) > 100
    assert 2 * np.polyfit(t, s, 2)[0] == pytest.approx(a, rel=1e-3)
    assert np.abs(lift).max() < 2e-3                    # stays on the ramp's surface while sliding
    assert run.kinetic_energy[-1] < 1e-8
    assert run.q[-1, 0, 2] == pytest.approx(ex.SIDE / 2, abs=2e-3)
    assert run.q[-1, 0, 0] > 1.0                         # past the ramp's lower edge (x = 0.87)


def test_example_rigid_bin_comes_to_rest_inside_with_the_floor_carrying_the_weight():
    need_extra("mechanics")
    ex = _example("rigid_bin")
    run, masses = ex.simulate(6, 1.5)
    assert not run.failed_steps
    q = run.q[-1]
    assert np.all(np.abs(q[:, :2]) < ex.WIDTH / 2) and np.all(q[:, 2] > 0) and np.all(q[:, 2] < 0.4)
    assert run.kinetic_energy[-1] < 1e-3 * run.kinetic_energy.max()
    assert ex.floor_force(run) == pytest.approx(masses.sum() * ex.G, rel=0.02)
    assert run.penetration.max() < 0.03                  # the scheme's: h|v|/2 at impact, a few times


def test_example_rigid_gripper_holds_or_slips_as_coulomb_says():
    """Fingers on prismatic rails pushed by F: the cube is held (no acceleration) when 2μF ≥ mg, and slides at
    g - 2μF/m otherwise (to 1e-3 relative); the fingers stay on their rails (the joints hold to 1e-6)."""
    need_extra("mechanics")
    ex = _example("rigid_gripper")
    held, weak = ex.simulate(20.0), ex.simulate(3.0)
    for run in (held, weak):
        assert not run.failed_steps
        fingers = run.q[:, 1:, :]
        assert np.abs(fingers[:, :, 1:3] - fingers[0, :, 1:3]).max() < 1e-6
        np.testing.assert_allclose(fingers[:, :, 3:], np.tile([1, 0, 0, 0], (*fingers.shape[:2], 1)), atol=1e-6)
    assert abs(ex.measured_acceleration(held)) < 1e-3
    assert ex.measured_acceleration(weak) == pytest.approx(ex.slip_acceleration(3.0), rel=1e-3)
