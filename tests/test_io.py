"""nsopt.io: every corpus file loads to the right kind and sizes; FCLIB and Siconos .dat round
trips (whole corpus and generated problems); files nsopt writes are read by Siconos itself (when
installed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt.io as io
from nsopt import generate as g
from nsopt.exceptions import FormatError
from nsopt.problems import (LCP, MLCP, FrictionContact, GenericMechanical, GlobalFrictionContact,
                            Relay)

from conftest import EXPECTED_INVALID, corpus_params, load_corpus_file

FOLDERS = ("lcp", "mlcp", "relay", "fc2d", "fc3d", "gfc2d", "gfc3d", "gmp", "rfc")
TYPES = {"lcp": LCP, "mlcp": MLCP, "relay": Relay, "fc2d": FrictionContact, "fc3d": FrictionContact,
         "gfc2d": GlobalFrictionContact, "gfc3d": GlobalFrictionContact, "gmp": GenericMechanical}
# files of the shared corpus that are not valid problems (see reference/README.md)
INVALID = {k.split("/")[1]: v for k, v in EXPECTED_INVALID.items()}   # refused on purpose, with their error


def _ints(path, k):
    """The first k whitespace tokens of a text file, as ints."""
    toks = []
    with open(path) as f:
        for line in f:
            toks.extend(line.split())
            if len(toks) >= k:
                break
    return [int(t) for t in toks[:k]]


def _expected_kind(path):
    folder = path.parent.name
    if folder != "fc3d" or path.suffix == ".hdf5":
        return folder
    low = path.name.lower()
    return "gfc3d" if low.startswith("gfc") and "condensed" not in low else "fc3d"


def _check_sizes(p, path):
    """Sizes of the loaded problem against the numbers the file states (header / FCLIB datasets)."""
    kind = p.kind
    if path.suffix == ".hdf5":
        import h5py

        with h5py.File(path, "r") as h:
            if kind.startswith("fc"):
                assert p.size == int(h["fclib_local/W/m"][0]) == int(h["fclib_local/W/n"][0])
                assert p.nc == h["fclib_local/vectors/mu"].shape[0]
                assert p.dim == int(h["fclib_local/spacedim"][0])
            else:
                assert p.ndof == int(h["fclib_global/M/m"][0])
                assert p.size == int(h["fclib_global/H/n"][0])
                assert p.nc == h["fclib_global/vectors/mu"].shape[0]
        assert sp.issparse(p.W if kind.startswith("fc") else p.M)
        return
    if kind in ("lcp", "relay"):
        n, storage, s0, s1 = _ints(path, 4)
        assert p.size == n == s0 == s1
        assert sp.issparse(p.M) == (storage != 0)
    elif kind == "mlcp":
        st1, st2, n, m = _ints(path, 4)
        assert (p.n, p.m) == (n, m)
    elif kind in ("fc2d", "fc3d"):
        dim, nc, storage, s0 = _ints(path, 4)
        assert (p.dim, p.nc, p.size) == (dim, nc, dim * nc) and s0 == dim * nc
        assert sp.issparse(p.W) == (storage != 0)
    elif kind in ("gfc2d", "gfc3d"):
        dim, nc, storage, s0 = _ints(path, 4)
        assert (p.dim, p.nc, p.ndof, p.size) == (dim, nc, s0, dim * nc)
        assert sp.issparse(p.M) == (storage != 0)
    elif kind == "gmp":
        storage, s0, s1 = _ints(path, 3)
        assert storage == 1 and p.size == s0 == s1
        assert sum(b.size for b in p.blocks) == s0
        assert sp.issparse(p.M)


@pytest.mark.parametrize("path", corpus_params(*FOLDERS))
def test_corpus_file_loads(path, corpus):
    if path.parent.name == "rfc":
        with pytest.raises(FormatError, match="rolling friction contact is not supported") as ei:
            io.load(path)
        assert path.name in str(ei.value)
        return
    if path.name in INVALID:
        with pytest.raises(FormatError, match=INVALID[path.name]) as ei:
            io.load(path)
        assert path.name in str(ei.value) and ei.value.line is not None
        return
    p = io.load(path)
    kind = _expected_kind(path)
    assert p.kind == kind
    assert isinstance(p, TYPES[kind])
    assert io.detect_kind(path) == kind
    _check_sizes(p, path)


def _copy_neutral(path, tmp_path):
    """Copy a corpus file to a folder and name that say nothing about its kind."""
    dst = tmp_path / ("problem" + path.suffix)
    shutil.copyfile(path, dst)
    return dst


@pytest.mark.parametrize("path", corpus_params("lcp", "mlcp", "relay", "fc2d", "fc3d", "gfc2d",
                                               "gfc3d", "gmp"))
def test_kind_detected_from_content(path, corpus, tmp_path):
    """Without folder or name hints, the content alone gives the kind."""
    if path.name in INVALID:          # refused on purpose: its error is what is checked
        assert load_corpus_file(path) is None
        return
    assert io.detect_kind(_copy_neutral(path, tmp_path)) == _expected_kind(path)


# ---------------------------------------------------------------------------------------------
# round trips
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", corpus_params("fc2d", "fc3d", "gfc2d", "gfc3d"))
def test_fclib_roundtrip_corpus(path, corpus, tmp_path):
    p = io.load(path)
    out = io.write_fclib(p, tmp_path / "p.hdf5", title="t", description="round trip")
    q = io.load(out)
    assert q == p
    assert q.kind == p.kind
    assert sp.issparse(q.W if q.kind.startswith("fc") else q.M)


def test_fclib_solution_and_guesses(corpus, tmp_path):
    path = corpus / "gfc3d" / "Box_Stacks-i0122-82-5.hdf5"
    p, extra = io.read_fclib(path, with_solution=True)
    assert set(extra["solution"]) == {"r", "u", "v"}
    assert len(extra["guesses"]) == 1 and extra["guesses"][0]["v"].shape == (p.ndof,)
    out = io.write_fclib(p, tmp_path / "s.hdf5", solution=extra["solution"],
                         guesses=extra["guesses"])
    p2, extra2 = io.read_fclib(out, with_solution=True)
    assert p2 == p
    for k, v in extra["solution"].items():
        np.testing.assert_array_equal(extra2["solution"][k], v)
    np.testing.assert_array_equal(extra2["guesses"][0]["r"], extra["guesses"][0]["r"])
    # a file without them
    p3, extra3 = io.read_fclib(corpus / "fc3d" / "LMGC_100_PR_PerioBox-i00361-60-03000.hdf5",
                               with_solution=True)
    assert extra3 == {"solution": None, "guesses": []}


@pytest.mark.parametrize("path", corpus_params("lcp", "mlcp", "relay", "fc2d", "fc3d", "gfc2d",
                                               "gfc3d", "gmp"))
def test_siconos_dat_roundtrip_corpus(path, corpus, tmp_path):
    if path.name in INVALID:          # refused on purpose: its error is what is checked
        assert load_corpus_file(path) is None
        return
    p = io.load(path)
    out = tmp_path / "p.dat"
    io.write_siconos_dat(p, out, overwrite=True)
    assert io.load(out, kind=p.kind) == p
    if p.kind in ("fc2d", "fc3d") and p.size <= 600:
        for storage in ("dense", "sbm", "sparse"):
            io.write_siconos_dat(p, out, storage=storage, overwrite=True)
            assert io.load(out, kind=p.kind) == p


def _generated():
    return [g.lcp(8, seed=1)[0], g.lcp(6, seed=2, matrix="psd")[0], g.mlcp(3, 4, seed=1)[0],
            g.relay(5, seed=3)[0], g.friction_contact(4, dim=3, seed=1)[0],
            g.friction_contact(3, dim=2, seed=2)[0],
            g.global_friction_contact(3, 10, dim=3, seed=1)[0],
            g.global_friction_contact(2, 6, dim=2, seed=2)[0]]


@pytest.mark.parametrize("storage", [None, "dense", "sbm", "sparse"])
def test_generated_roundtrip_dat(storage, tmp_path):
    for p in _generated():
        if storage == "sbm" and p.kind.startswith("gfc"):
            with pytest.raises(ValueError):
                io.write_siconos_dat(p, tmp_path / "x.dat", storage=storage, overwrite=True)
            continue
        out = io.write_siconos_dat(p, tmp_path / f"{p.kind}.dat", storage=storage, overwrite=True)
        assert io.load(out, kind=p.kind) == p
        assert io.load(out) == p          # detection from the content alone


def test_generated_roundtrip_fclib(tmp_path):
    for p in _generated():
        if not p.kind.endswith("fc2d") and not p.kind.endswith("fc3d"):
            continue
        out = io.write_fclib(p, tmp_path / f"{p.kind}.hdf5")
        assert io.load(out) == p
        assert io.detect_kind(out) == p.kind


def test_sparse_input_stays_sparse(tmp_path):
    p = g.friction_contact(5, dim=3, seed=0)[0]
    W = sp.csr_matrix(np.asarray(p.W) * (np.abs(np.asarray(p.W)) > 0.3))
    sparse_p = FrictionContact(3, W, p.q, p.mu)
    for storage in ("sbm", "sparse"):
        out = io.write_siconos_dat(sparse_p, tmp_path / "s.dat", storage=storage, overwrite=True)
        q = io.load(out)
        assert sp.issparse(q.W) and q == sparse_p
    q = io.load(io.write_fclib(sparse_p, tmp_path / "s.hdf5"))
    assert sp.issparse(q.W) and q == sparse_p


def test_gmp_roundtrip(corpus, tmp_path):
    for name in ("GMP0.dat", "GMP5.dat", "Example1_Fc3D_SBM.dat"):
        p = io.load(corpus / "gmp" / name)
        out = io.write_siconos_dat(p, tmp_path / name, overwrite=True)
        assert io.load(out) == p


def test_writer_rejects_unknown(tmp_path):
    with pytest.raises(TypeError):
        io.write_fclib(g.lcp(3)[0], tmp_path / "x.hdf5")
    with pytest.raises(ValueError):
        io.write_siconos_dat(object(), tmp_path / "x.dat")


# ---------------------------------------------------------------------------------------------
# Siconos reads what nsopt writes (Siconos 4.4 for /usr/bin/python3, when installed)
# ---------------------------------------------------------------------------------------------

SICONOS_PY = "/usr/bin/python3"
_SICONOS_SCRIPT = textwrap.dedent(r"""
    import json, sys, os
    import numpy as np, scipy.sparse as sp
    sys.path.insert(0, sys.argv[2])
    import siconos.numerics as sn
    sn.numerics_set_verbose(0)
    from siconos_bench import Worker
    w = Worker()
    jobs = json.load(open(sys.argv[1]))
    out, keep = {}, []
    def arr(M):
        if sp.issparse(M):
            return M.toarray()
        if isinstance(M, np.ndarray):
            return M
        return sn.NM_csc(M).toarray()
    for key, kind, path in jobs:
        p = w.load(kind, path)
        keep.append(p)
        if kind == 'lcp':
            d = dict(M=p.M, q=p.q)
        elif kind == 'mlcp':
            d = dict(M=p.M, q=p.q)
        elif kind in ('fc2d', 'fc3d'):
            d = dict(M=p.M, q=p.q, mu=p.mu)
        else:
            d = dict(M=p.M, H=p.H, q=p.q, b=p.b, mu=p.mu)
        for k, v in d.items():
            out[key + '::' + k] = np.asarray(arr(v) if k in 'MH' else v, dtype=float)
    np.savez(sys.argv[3], **out)
    sys.stdout.flush()
    os._exit(0)
""")


def _siconos_available():
    if not os.path.exists(SICONOS_PY):
        return False
    r = subprocess.run([SICONOS_PY, "-c", "import siconos.numerics"], capture_output=True)
    return r.returncode == 0


def test_siconos_reads_nsopt_files(tmp_path):
    from nsopt.data import data_dir

    tools = data_dir().parent / "tools"
    if not _siconos_available() or not (tools / "siconos_bench.py").is_file():
        pytest.skip("Siconos (python3-siconos for /usr/bin/python3) or siconos_bench.py "
                    "not available")
    probs = {}
    jobs = []
    lcp = g.lcp(6, seed=4)[0]
    fc3, fc2 = g.friction_contact(4, 3, seed=5)[0], g.friction_contact(3, 2, seed=6)[0]
    gfc = g.global_friction_contact(3, 9, dim=3, seed=7)[0]
    m0 = g.mlcp(2, 3, seed=8)[0]
    mlcp = MLCP.from_matrix(m0.M, m0.q, 2, blocks_rows=[0, 2, 5], blocks_is_comp=[0, 1])
    cases = [("lcp_dense", lcp, None), ("lcp_sbm", lcp, "sbm"), ("fc3_dense", fc3, "dense"),
             ("fc3_sbm", fc3, "sbm"), ("fc2_sbm", fc2, "sbm"), ("fc3_sparse", fc3, "sparse"),
             ("gfc_dense", gfc, "dense"), ("gfc_sparse", gfc, "sparse"), ("mlcp", mlcp, None)]
    for key, p, storage in cases:
        f = io.write_siconos_dat(p, tmp_path / f"{key}.dat", storage=storage, overwrite=True)
        jobs.append((key, p.kind, str(f)))
        probs[key] = p
    for key, p in (("fclib_fc3", fc3), ("fclib_gfc", gfc)):
        f = io.write_fclib(p, tmp_path / f"{key}.hdf5")
        jobs.append((key, p.kind, str(f)))
        probs[key] = p
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    (tmp_path / "dump.py").write_text(_SICONOS_SCRIPT)
    r = subprocess.run([SICONOS_PY, str(tmp_path / "dump.py"), str(tmp_path / "jobs.json"),
                        str(tools), str(tmp_path / "out.npz")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    d = np.load(tmp_path / "out.npz")
    for key, p in probs.items():
        mats = {"M": p.W if p.kind.startswith("fc") else p.M}
        if p.kind.startswith("gfc"):
            mats["H"] = p.H
        for name, A in mats.items():
            A = A.toarray() if sp.issparse(A) else np.asarray(A)
            np.testing.assert_array_equal(d[f"{key}::{name}"], A, err_msg=f"{key} {name}")
        np.testing.assert_array_equal(d[f"{key}::q"], p.q)
        if hasattr(p, "mu"):
            np.testing.assert_array_equal(d[f"{key}::mu"], p.mu)
        if hasattr(p, "b") and p.kind.startswith("gfc"):
            np.testing.assert_array_equal(d[f"{key}::b"], p.b)


def test_global_detected_when_ndof_equals_local_size(tmp_path):
    """A global problem whose ndof equals dim * nc, in Siconos' FrictionContact folder under a name
    that does not say global (as Siconos' problem-check2.dat): the content decides."""
    d = tmp_path / "FrictionContact"
    d.mkdir()
    gfc = g.global_friction_contact(3, 9, dim=3, seed=3)[0]
    f = io.write_siconos_dat(gfc, d / "problem-check.dat", storage="sparse", overwrite=True)
    with open(f, "a") as fh:
        fh.write("1\n")                   # a trailing flag, as in Siconos' files
    assert io.detect_kind(f) == "gfc3d" and io.load(f) == gfc
    fc = g.friction_contact(3, 3, seed=3)[0]
    f = io.write_siconos_dat(fc, d / "problem-local.dat", storage="sbm", overwrite=True)
    with open(f, "a") as fh:
        fh.write("0\n")
    assert io.detect_kind(f) == "fc3d" and io.load(f) == fc
