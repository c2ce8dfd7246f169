"""Records in Siconos' mechanics HDF5 layout (nsopt/mechanics/siconos_hdf5.py): nsopt's record holds the layout
that Siconos' ``MechanicsHdf5`` reads and ``MechanicsHdf5Runner`` continues, and nsopt reads (and continues) a
run that Siconos wrote. The Siconos side runs under /usr/bin/python3 (Debian's python3-siconos 4.4) and skips
without it."""

import json
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import need_extra

need_extra("mechanics")

from nsopt import mechanics as mc  # noqa: E402
from nsopt.mechanics import siconos_hdf5  # noqa: E402
from nsopt.exceptions import FormatError  # noqa: E402

SICONOS_PY = "/usr/bin/python3"


def _siconos_available():
    return shutil.which(SICONOS_PY) and subprocess.run(
        [SICONOS_PY, "-c", "import siconos.io.mechanics_run, siconos.mechanics.collision.bullet"],
        capture_output=True).returncode == 0


needs_siconos = pytest.mark.skipif(not _siconos_available(),
                                   reason="Siconos 4.4 mechanics (python3-siconos for /usr/bin/python3) absent")


def _scene():
    """A cube and a ball dropped on a box (Siconos' gravity, so that both codes run the same scene)."""
    sc = mc.Scene(gravity=(0, 0, -siconos_hdf5.SICONOS_GRAVITY), margin=0.02)
    sc.add_primitive_shape("Cube", "Box", (0.2, 0.2, 0.2))
    sc.add_primitive_shape("Ball", "Sphere", 0.1)
    sc.add_primitive_shape("Ground", "Box", (2.0, 2.0, 0.2))
    sc.add_Newton_impact_friction_nsl("contact", mu=0.5)
    sc.add_object("cube", ["Cube"], translation=[0, 0, 0.15], mass=1.0, inertia=[0.2 ** 2 / 6] * 3)
    sc.add_object("ball", ["Ball"], translation=[0.5, 0, 0.2], mass=2.0, inertia=[0.4 * 2 * 0.01] * 3)
    sc.add_object("ground", ["Ground"], translation=[0, 0, -0.1])
    return sc


def test_record_holds_siconos_layout(tmp_path):
    """An nsopt record carries Siconos' layout (data/ref, data/input, data/nslaws, data/static, data/dynamic,
    data/velocities, data/cf, data/solv, root attribute dimension): read back through it the poses, twists and
    contact forces are the run's (the contacts of each step's problem, impulses = forces times h)."""
    path = tmp_path / "run.h5"
    run = _scene().run(0.3, 5e-3, record=path)
    with h5py.File(path, "r") as f:
        assert int(f.attrs["dimension"]) == 3
        assert {"ref", "input", "nslaws", "static", "dynamic", "velocities", "cf", "solv"} <= set(f["data"])
        assert f["data/ref/Cube"].attrs["primitive"] == "Box" and f["data/ref/Cube"].shape == (1, 3)
        assert [int(f["data/input"][k].attrs["id"]) for k in ("cube", "ball", "ground")] == [1, 2, -1]
        assert f["data/cf"].shape[1] == 26 and f["data/dynamic"].shape == (2 * 61, 9)
    rec, own = mc.load_siconos_record(path), mc.load_record(path)
    np.testing.assert_array_equal(rec.t, own.t)
    np.testing.assert_array_equal(rec.q, own.q)
    np.testing.assert_array_equal(rec.v, own.v)
    for step in (10, -1):
        a, b = rec.contacts(step), own.contacts(step)
        on = b["active"]
        assert np.array_equal(a["id"], b["id"][on])
        np.testing.assert_allclose(a["force"], b["force"][on], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(a["pc1"], b["pc1"][on], rtol=0, atol=0)
    # at rest: the floor carries the weights
    assert rec.contacts(-1)["force"][:, 0].sum() == pytest.approx(3.0 * siconos_hdf5.SICONOS_GRAVITY, rel=1e-6)


def test_siconos_record_errors_name_the_field(tmp_path):
    """A file without Siconos' data group, or with a shape nsopt has no counterpart for, is a FormatError naming
    what is wrong."""
    bad = tmp_path / "bad.h5"
    with h5py.File(bad, "w") as f:
        f.create_group("other")
    with pytest.raises(FormatError, match="no 'data' group"):
        mc.load_siconos_record(bad)
    path = tmp_path / "run.h5"
    _scene().run(0.01, 5e-3, record=path)
    with h5py.File(path, "a") as f:
        del f.attrs["scene"]
        f["data/ref/Cube"].attrs["primitive"] = "Disk"
    with pytest.raises(FormatError, match="Cube.*Disk"):
        mc.load_siconos_record(path)
    text = tmp_path / "text.h5"
    text.write_text("not hdf5")
    with pytest.raises(FormatError, match="HDF5"):
        mc.load_siconos_record(text)


_READ = r"""
import json, sys
import numpy as np
import siconos.kernel as sk
import siconos.numerics as sn
from siconos.io.mechanics_hdf5 import MechanicsHdf5
from siconos.io.mechanics_run import MechanicsHdf5Runner
path, t0 = sys.argv[1], float(sys.argv[2])
out = {}
with MechanicsHdf5(path, mode="r") as io:           # what siconos_vview reads
    out["shapes"] = {k: [str(io.shapes()[k].attrs["primitive"]), io.shapes()[k][:].ravel().tolist()] for k in io.shapes()}
    out["ids"] = {k: int(io.instances()[k].attrs["id"]) for k in io.instances()}
    out["contactors"] = {k: [str(io.instances()[k][c].attrs["shape_name"]) for c in io.instances()[k]]
                         for k in io.instances()}
    d = io.dynamic_data()[:]
    out["last"] = d[d[:, 0] == d[:, 0].max()][:, 1:].tolist()
    out["cf_last"] = io.contact_forces_data()[:][:, [0, 14, 20, 24, 25]].tolist()[-3:]
so = sk.solver_options_create(sn.SICONOS_FRICTION_3D_NSGS)
so.iparam[sn.SICONOS_IPARAM_MAX_ITER] = 1000
so.dparam[sn.SICONOS_DPARAM_TOL] = 1e-8
first = {}
def start(io):
    if not first:
        topo = io._nsds.topology()
        first.update({n: np.asarray(topo.getDynamicalSystem(n).q()).tolist() for n in ("cube", "ball")})
with MechanicsHdf5Runner(mode="r+", io_filename=path, verbose=False) as io:   # Siconos continues the run
    io.run(t0=t0, T=t0 + 0.1, h=5e-3, theta=0.50001, Newton_max_iter=1, solver_options=so, output_frequency=1,
           verbose=False, verbose_progress=False, start_run_iteration_hook=start)
    topo = io._nsds.topology()
    out["continued_first"] = first
    out["continued_last"] = {n: np.asarray(topo.getDynamicalSystem(n).q()).tolist() for n in ("cube", "ball")}
print(json.dumps(out))
"""


@needs_siconos
def test_siconos_reads_and_continues_an_nsopt_record(tmp_path):
    """Siconos' reader (MechanicsHdf5, what siconos_vview opens) finds nsopt's shapes, objects, poses and contacts;
    Siconos' runner continues the run from nsopt's last poses (its first step starts there) and the bodies stay on
    the floor (within Bullet's margin, 1 mm)."""
    path = tmp_path / "run.h5"
    run = _scene().run(0.3, 5e-3, record=path)
    r = subprocess.run([SICONOS_PY, "-c", _READ, str(path), "0.3"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["shapes"] == {"Ball": ["Sphere", [0.1]], "Cube": ["Box", [0.2, 0.2, 0.2]],
                             "Ground": ["Box", [2.0, 2.0, 0.2]]}
    assert out["ids"] == {"ball": 2, "cube": 1, "ground": -1}
    assert out["contactors"] == {"ball": ["Ball"], "cube": ["Cube"], "ground": ["Ground"]}
    np.testing.assert_allclose(np.array(out["last"])[:, 1:], run.q[-1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(out["continued_first"]["cube"], run.q[-1, 0], atol=1e-15)
    np.testing.assert_allclose(out["continued_first"]["ball"], run.q[-1, 1], atol=1e-15)
    assert abs(out["continued_last"]["cube"][2] - 0.1) < 1e-3 and abs(out["continued_last"]["ball"][2] - 0.1) < 1e-3


_WRITE = r"""
import json, sys
import numpy as np
import siconos.kernel as sk
import siconos.numerics as sn
from siconos.io.mechanics_run import MechanicsHdf5Runner
from siconos.mechanics.collision.tools import Contactor
path = sys.argv[1]
with MechanicsHdf5Runner(mode="w", io_filename=path, verbose=False) as io:
    io.add_primitive_shape("Cube", "Box", [0.2, 0.2, 0.2])
    io.add_primitive_shape("Ball", "Sphere", [0.1])
    io.add_primitive_shape("Ground", "Box", [2.0, 2.0, 0.2])
    io.add_Newton_impact_friction_nsl("contact", mu=0.5, e=0.0)
    io.add_object("cube", [Contactor("Cube")], translation=[0, 0, 0.15], mass=1.0, inertia=[0.2 ** 2 / 6] * 3)
    io.add_object("ball", [Contactor("Ball")], translation=[0.5, 0, 0.2], mass=2.0, inertia=[0.4 * 2 * 0.01] * 3)
    io.add_object("ground", [Contactor("Ground")], translation=[0, 0, -0.1])
so = sk.solver_options_create(sn.SICONOS_FRICTION_3D_NSGS)
so.iparam[sn.SICONOS_IPARAM_MAX_ITER] = 1000
so.dparam[sn.SICONOS_DPARAM_TOL] = 1e-8
with MechanicsHdf5Runner(mode="r+", io_filename=path, verbose=False) as io:
    io.run(t0=0.0, T=0.3, h=5e-3, theta=0.50001, Newton_max_iter=1, solver_options=so, output_frequency=1,
           verbose=False, verbose_progress=False)
    topo = io._nsds.topology()
    print(json.dumps({n: np.asarray(topo.getDynamicalSystem(n).q()).tolist() for n in ("cube", "ball")}))
"""


@needs_siconos
def test_nsopt_reads_and_continues_a_siconos_record(tmp_path):
    """A run that Siconos' MechanicsHdf5Runner wrote (Bullet, NSGS): nsopt reads its scene (shapes, masses,
    inertia, law), its 60 steps and their contacts (the floor carries the weights at the end), and continues it
    from its last poses: the bodies stay on the floor (nsopt's projection lifts Siconos' 0.26 mm of penetration)."""
    path = tmp_path / "siconos.h5"
    r = subprocess.run([SICONOS_PY, "-c", _WRITE, str(path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    last = json.loads(r.stdout.strip().splitlines()[-1])
    rec = mc.load_siconos_record(path)
    assert len(rec) == 60 and rec.names == ["cube", "ball"]
    assert rec.settings["h"] == pytest.approx(5e-3, rel=1e-6)
    assert rec.t[-1] == pytest.approx(0.3, abs=1e-15)      # Siconos' float32 times, read as the steps they were
    np.testing.assert_allclose(rec.q[-1, 0], last["cube"], atol=1e-6)       # (Siconos writes float32)
    np.testing.assert_allclose(rec.q[-1, 1], last["ball"], atol=1e-6)
    sc = rec.scene(-1)
    assert [o["name"] for o in sc.objects] == ["cube", "ball", "ground"]
    assert sc.objects[2]["mass"] is None and sc.laws[(0, 0)].mu == 0.5
    np.testing.assert_allclose(np.diag(sc.objects[1]["inertia"]), [0.008] * 3)
    c = rec.contacts(-1)
    assert (c["body2"] == -1).all()
    assert c["force"][:, 0].sum() == pytest.approx(3.0 * siconos_hdf5.SICONOS_GRAVITY, rel=1e-4)
    run = sc.run(0.4, 5e-3, continue_from=rec)
    assert run.t[0] == pytest.approx(0.305, abs=1e-6)
    assert np.abs(run.q[-1, :, 2] - 0.1).max() < 1e-6
    assert run.penetration[-1] <= 1e-8
