"""Bad input (issue 7, section 4): each case with the behaviour it must have.

Problems: immutable even when built from the caller's sparse matrix; complex, None, string data
and empty boxes rejected naming the field. Options: typed checks of tol, max_iter, time_limit.
Files: a ``.dat`` cut in the middle of its last number, a missing file, absurd sizes declared
by FCLIB and ``.dat`` headers, and ``write_fclib``'s failure modes.
"""

from __future__ import annotations

import errno
import math
import os
import time

import numpy as np
import pytest
import scipy.sparse as sp

import nsopt
import nsopt.io as io
from nsopt import generate as g
from nsopt.exceptions import FormatError, OptionError, OutputError, ProblemError
from nsopt.problems import Block, GenericMechanical, Relay

# ---------------------------------------------------------------------------------------------
# problems
# ---------------------------------------------------------------------------------------------


def test_sparse_problem_does_not_share_the_callers_matrix():
    M = sp.csr_matrix([[2., 1], [1, 2]])
    p = nsopt.LCP(M, [-5., -6])
    a = nsopt.solve(p, method="pgs")
    M.data *= 10                                   # the caller changes its own matrix
    b = nsopt.solve(p, method="pgs")
    assert a.success and b.success
    np.testing.assert_allclose(b.z, [4 / 3, 7 / 3], atol=1e-7)   # Murty's LCP, unchanged
    np.testing.assert_array_equal(a.z, b.z)
    assert p.error(b.z) == b.error
    assert not np.shares_memory(p.M.data, M.data)
    with pytest.raises(ValueError, match="read-only"):
        p.M.data[0] = 3.0                          # the problem's own copy is read-only
    with pytest.raises(ValueError, match="read-only"):
        p.M.indices[0] = 1


def test_dense_problem_does_not_share_the_callers_array():
    M = np.array([[2., 1], [1, 2]])
    q = np.array([-5., -6])
    p = nsopt.LCP(M, q)
    M *= 10
    q[:] = 0
    assert p.M[0, 0] == 2.0 and p.q[0] == -5.0


@pytest.mark.parametrize("make, field", [
    (lambda: nsopt.LCP(np.eye(2) * (1 + 1j), [1., 1.]), "M"),
    (lambda: nsopt.LCP(np.eye(2), np.array([1 + 2j, 1.])), "q"),
    (lambda: nsopt.LCP(np.eye(2), [1 + 2j, 1.]), "q"),
    (lambda: nsopt.LCP(sp.csr_matrix(np.eye(2) * (1 + 1j)), [1., 1.]), "M"),
    (lambda: nsopt.LCP(sp.eye(2, dtype=complex, format="csc"), [1., 1.]), "M"),
    (lambda: Relay(np.eye(2), [1., 1.], [-1j, -1.], 1.), "lb"),
    (lambda: Relay(np.eye(2), [1., 1.], -1., np.array([1 + 0j, 1])), "ub"),
    (lambda: nsopt.FrictionContact(3, np.eye(3), [1., 0, 0], [0.5 + 0.1j]), "mu"),
])
def test_complex_data_is_rejected_naming_the_field(make, field):
    with _no_complex_warning():
        with pytest.raises(ProblemError, match="complex") as e:
            make()
    assert e.value.field == field


class _no_complex_warning:
    """No ComplexWarning may escape: the imaginary part is never dropped silently."""

    def __enter__(self):
        import warnings
        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("error", np.exceptions.ComplexWarning)

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


@pytest.mark.parametrize("make, field, fault", [
    (lambda: nsopt.LCP(None, None), "M", "is None"),
    (lambda: nsopt.LCP(np.eye(1), None), "q", "is None"),
    (lambda: nsopt.LCP(np.eye(2), [1., None]), "q", "None entries"),
    (lambda: Relay(np.eye(2), [1., 1.], "a", 1.), "lb", "string"),
    (lambda: Relay(np.eye(2), [1., 1.], None, 1.), "lb", "is None"),
    (lambda: Relay(np.eye(2), [1., 1.], -1., None), "ub", "is None"),
    (lambda: Relay(np.eye(2), [1., 1.], [-1., np.nan], 1.), "lb", "nan"),
    (lambda: Relay(np.eye(2), [1., 1.], np.inf, np.inf), "lb", "empty"),
    (lambda: Relay(np.eye(2), [1., 1.], -np.inf, -np.inf), "ub", "empty"),
    (lambda: Relay(np.eye(2), [1., 1.], [-1., -1., -1.], 1.), "lb", "3 entries"),
    (lambda: GenericMechanical(np.eye(3), [1., 1, 1], [{"kind": "lcp", "sz": 3}]), "blocks[0]",
     "expected a Block"),
    (lambda: GenericMechanical(np.eye(3), [1., 1, 1], [("lcp", "3")]), "blocks[0].size",
     "integer"),
    (lambda: GenericMechanical(np.eye(3), [1., 1, 1], [("lcp", 3.0)]), "blocks[0].size",
     "integer"),
    (lambda: GenericMechanical(np.eye(3), [1., 1, 1], [("lcp", True)]), "blocks[0].size",
     "integer"),
    (lambda: GenericMechanical(np.eye(3), [1., 1, 1], [("fc3d", 3, "a")]), "blocks[0].mu",
     "friction"),
    (lambda: GenericMechanical(np.eye(3), [1., 1, 1], [Block("relay", 3, None, (1.,) * 3,
                                                             (0.,) * 3)]),
     "lb", "lb > ub"),
    (lambda: GenericMechanical(np.eye(3), [1., 1, 1], 3), "blocks", "sequence"),
])
def test_bad_fields_raise_problem_error_naming_the_field(make, field, fault):
    with pytest.raises(ProblemError, match=fault) as e:
        make()
    assert e.value.field == field


def test_relay_with_infinite_bounds_on_one_side_is_fine():
    p = Relay(np.eye(2), [1., -1.], -np.inf, [np.inf, 0.5])
    sol = nsopt.solve(p, method="lemke")
    assert sol.success
    np.testing.assert_allclose(sol.z, [-1., 0.5], atol=1e-10)


# ---------------------------------------------------------------------------------------------
# options (nsopt/solve.py's check_* functions)
# ---------------------------------------------------------------------------------------------

MURTY = nsopt.LCP([[2., 1.], [1., 2.]], [-5., -6.])


@pytest.mark.parametrize("opts", [
    {"tol": math.inf}, {"tol": True}, {"tol": 0.0}, {"tol": -1e-8}, {"tol": "1e-8"},
    {"tol": math.nan}, {"max_iter": True}, {"max_iter": 1.5}, {"max_iter": -1},
    {"time_limit": "abc"}, {"time_limit": -1.0}, {"time_limit": True}, {"time_limit": math.nan},
])
def test_bad_common_options_raise_option_error(opts):
    with pytest.raises(OptionError, match=next(iter(opts))):
        nsopt.solve(MURTY, method="pgs", **opts)


@pytest.mark.parametrize("opts", [
    {"tol": np.float32(1e-8)}, {"tol": np.float64(1e-8)}, {"max_iter": np.int64(500)},
    {"time_limit": np.float32(10.0)}, {"time_limit": math.inf},
])
def test_numpy_scalars_are_accepted_as_options(opts):
    sol = nsopt.solve(MURTY, method="pgs", **opts)
    assert sol.success and sol.error <= 1e-7


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------

def test_missing_file_is_file_not_found(tmp_path):
    for name in ("missing.dat", "missing.hdf5"):
        with pytest.raises(FileNotFoundError):
            io.load(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        io.read_lcp(tmp_path / "missing.dat")
    with pytest.raises(FileNotFoundError):
        io.read_fclib(tmp_path / "missing.hdf5")
    with pytest.raises(IsADirectoryError):
        io.load(tmp_path)
    with pytest.raises(OSError):                   # the point: `except OSError` catches it
        io.load(tmp_path / "missing.dat")


def test_dat_cut_in_the_middle_of_its_last_number(corpus, tmp_path):
    src = corpus / "fc3d" / "Capsules-i101-404.dat"
    data = src.read_bytes()
    assert io.load(src).mu[-1] == 0.7
    nlines = data.count(b"\n")
    for cut in (3, 5, 7, 9, 12):                   # inside the exponent, the mantissa
        f = tmp_path / f"cut{cut}.dat"
        f.write_bytes(data[:-cut])
        with pytest.raises(FormatError, match="cut in the middle of a number") as e:
            io.load(f)
        assert e.value.line == nlines              # the last line (no line end after it)
        with pytest.raises(FormatError, match="cut in the middle"):
            io.read_friction_contact(f)
    f = tmp_path / "nolineend.dat"                 # only the line end removed: complete values
    f.write_bytes(data.rstrip())
    assert io.load(f).mu[-1] == 0.7


def test_dat_written_without_line_end_in_a_free_format_still_loads(tmp_path):
    f = tmp_path / "lcp.dat"
    f.write_text("2\n0\n2\n2\n2 2\n2 1\n1 2\n-5 -6.5")      # mixed formats: no conclusion
    p = io.load(f, kind="lcp")
    np.testing.assert_array_equal(p.q, [-5., -6.5])


@pytest.mark.parametrize("header", ["1000000000", "10000000000000"])
def test_dat_absurd_header_counts_fail_before_allocating(tmp_path, header):
    f = tmp_path / "huge.dat"
    f.write_text(f"{header}\n0\n{header}\n{header}\n{header} {header}\n1 2 3\n")
    t0 = time.perf_counter()
    with pytest.raises(FormatError, match="exceeds what the file holds|ends early"):
        io.load(f, kind="lcp")
    assert time.perf_counter() - t0 < 5.0          # a guard against a hang, not a timing test
    f.write_text(f"3\n0\n{header}\n3\n1 2 3\n")
    with pytest.raises(FormatError):
        io.load(f, kind="lcp")
    f.write_text(f"3\n1\n{header}\n{header}\n{header}\n1\n1\n")    # SBM with absurd block counts
    with pytest.raises(FormatError):
        io.load(f, kind="lcp")


def _fclib_with_declared_size(path, size):
    """A 1-contact FCLIB file whose W declares size x size (q has 3 entries)."""
    _fclib_declaring(path, None, 0, size=size, q_size=3)


@pytest.mark.parametrize("size", [10 ** 9, 10 ** 12])
def test_fclib_absurd_declared_sizes_fail_before_allocating(tmp_path, size):
    f = tmp_path / "huge.hdf5"
    _fclib_with_declared_size(f, size)
    t0 = time.perf_counter()
    with pytest.raises(FormatError, match=f"m = {size}: the problem's vectors imply 3 rows"):
        io.load(f)
    assert time.perf_counter() - t0 < 5.0          # a guard against a hang, not a timing test


def test_fclib_consistent_sizes_still_load(tmp_path):
    f = tmp_path / "ok.hdf5"
    _fclib_with_declared_size(f, 3)
    p = io.load(f)
    assert p.kind == "fc3d" and p.W.shape == (3, 3)
    np.testing.assert_array_equal(p.W.toarray(), [[1, 1, 0], [1, 1, 0], [0, 0, 1]])


# ---------------------------------------------------------------------------------------------
# write_fclib
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def fc():
    return g.friction_contact(nc=2, dim=3, seed=1)[0]


def _no_tmp(folder):
    """No temporary file of a writer left behind (they are '.<name>.<random>.part' beside the target)."""
    return [p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".part"))] == []


def test_write_fclib_to_a_folder(tmp_path, fc):
    with pytest.raises(OutputError, match="is a folder") as e:
        io.write_fclib(fc, tmp_path)
    assert e.value.errno == errno.EISDIR and isinstance(e.value, OSError)
    assert ".tmp" not in str(e.value) and ".part" not in str(e.value)
    assert _no_tmp(tmp_path) and _no_tmp(tmp_path.parent)


@pytest.mark.parametrize("solution, field", [
    ({"r": "abc"}, "solution['r']"),
    ({"r": [1.0, 2.0]}, "solution['r']"),                     # wrong size
    ({"x": np.zeros(6)}, "solution['x']"),                    # unknown name
    ({"u": np.full(6, np.nan)}, "solution['u']"),
    ({"v": np.zeros(6)}, "solution['v']"),                    # v: global problems only
])
def test_write_fclib_checks_the_solution_before_writing(tmp_path, fc, solution, field):
    out = tmp_path / "p.hdf5"
    with pytest.raises(ProblemError) as e:
        io.write_fclib(fc, out, solution=solution)
    assert e.value.field == field
    assert not out.exists() and _no_tmp(tmp_path)


def test_write_fclib_checks_guesses(tmp_path, fc):
    with pytest.raises(ProblemError, match=r"guesses\[1\]\['r'\]"):
        io.write_fclib(fc, tmp_path / "p.hdf5", guesses=[{"r": np.zeros(fc.size)}, {"r": [1.]}])
    assert _no_tmp(tmp_path)


def test_write_fclib_failure_midway_leaves_no_tmp(tmp_path, fc, monkeypatch):
    import nsopt.io.fclib as fclib

    def boom(grp, A):
        raise RuntimeError("disk full")
    monkeypatch.setattr(fclib, "_write_matrix", boom)
    out = tmp_path / "p.hdf5"
    with pytest.raises(RuntimeError, match="disk full"):
        io.write_fclib(fc, out)
    assert not out.exists() and _no_tmp(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True,
                    reason="root can write into a read-only folder")
def test_write_fclib_unwritable_folder_names_the_target(tmp_path, fc):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(OutputError) as e:
            io.write_fclib(fc, ro / "p.hdf5")
        assert e.value.errno == errno.EACCES
        assert e.value.filename == str(ro / "p.hdf5") and ".tmp" not in str(e.value)
    finally:
        ro.chmod(0o700)


def test_write_fclib_os_error_names_the_target_not_the_tmp_file(tmp_path, fc, monkeypatch):
    import h5py

    real = h5py.File

    def refuse(name, mode="r", *a, **k):
        if mode == "w":
            raise PermissionError(13, "Permission denied", str(name))
        return real(name, mode, *a, **k)
    monkeypatch.setattr(h5py, "File", refuse)
    out = tmp_path / "p.hdf5"
    with pytest.raises(OutputError) as e:
        io.write_fclib(fc, out)
    assert e.value.errno == errno.EACCES
    assert e.value.filename == str(out) and ".tmp" not in str(e.value) and ".part" not in str(e.value)
    assert _no_tmp(tmp_path)


def test_write_fclib_missing_folder_names_the_target(tmp_path, fc):
    out = tmp_path / "nowhere" / "p.hdf5"
    with pytest.raises(OutputError) as e:
        io.write_fclib(fc, out)
    assert e.value.errno == errno.ENOENT
    assert e.value.filename == str(out) and ".tmp" not in str(e.value)


def test_write_fclib_does_not_overwrite_unless_asked(tmp_path, fc):
    out = io.write_fclib(fc, tmp_path / "p.hdf5", solution={"r": np.zeros(fc.size)})
    before = out.read_bytes()
    other = nsopt.FrictionContact(fc.dim, fc.W, np.asarray(fc.q) + 1.0, fc.mu)
    with pytest.raises(OutputError, match="overwrite=True") as e:
        io.write_fclib(other, out)
    assert e.value.errno == errno.EEXIST
    assert out.read_bytes() == before
    io.write_fclib(other, out, overwrite=True)
    np.testing.assert_array_equal(io.load(out).q, np.asarray(fc.q) + 1.0)
    assert _no_tmp(tmp_path)


def test_write_fclib_keeps_the_users_tmp_file(tmp_path, fc):
    """Writing X.hdf5 used X.hdf5.tmp as its temporary file and deleted a user's file of that name."""
    mine = tmp_path / "p.hdf5.tmp"
    mine.write_bytes(b"my notes")
    out = io.write_fclib(fc, tmp_path / "p.hdf5")
    assert mine.read_bytes() == b"my notes"
    assert io.load(out) == fc
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.hdf5", "p.hdf5.tmp"]


def test_write_siconos_dat_follows_the_same_rule(tmp_path, fc):
    """overwrite=False by default (it replaced files silently), a typed error on a folder (it raised a
    bare IsADirectoryError) or a missing folder, a user's X.dat.tmp untouched."""
    lcp = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    out = tmp_path / "murty.dat"
    (tmp_path / "murty.dat.tmp").write_text("mine")
    assert io.write_siconos_dat(lcp, out) == out
    assert (tmp_path / "murty.dat.tmp").read_text() == "mine"
    before = out.read_bytes()
    with pytest.raises(OutputError, match=r"Siconos \.dat file exists \(pass overwrite=True.*murty\.dat") as e:
        io.write_siconos_dat(nsopt.LCP([[1.0]], [1.0]), out)
    assert e.value.errno == errno.EEXIST and out.read_bytes() == before
    io.write_siconos_dat(nsopt.LCP([[1.0]], [1.0]), out, overwrite=True)
    assert io.load(out).size == 1
    with pytest.raises(OutputError, match="is a folder") as e:
        io.write_siconos_dat(lcp, tmp_path)
    assert e.value.errno == errno.EISDIR
    with pytest.raises(OutputError, match="no such folder") as e:
        io.write_siconos_dat(lcp, tmp_path / "nowhere" / "x.dat")
    assert e.value.errno == errno.ENOENT
    assert _no_tmp(tmp_path) is False  # the user's murty.dat.tmp is still there, and only it
    assert sorted(x.name for x in tmp_path.iterdir()) == ["murty.dat", "murty.dat.tmp"]


def test_write_fclib_round_trip_with_checked_solution(tmp_path, fc):
    r = np.arange(fc.size, dtype=float)
    out = io.write_fclib(fc, tmp_path / "p.hdf5", solution={"r": r, "u": fc.u(r)})
    p, extra = io.read_fclib(out, with_solution=True)
    assert p == fc
    np.testing.assert_array_equal(extra["solution"]["r"], r)


@pytest.mark.parametrize("n", ["1", 1.0, True, None])
def test_mlcp_number_of_equalities_must_be_an_integer(n):
    with pytest.raises(ProblemError, match="integer") as e:
        nsopt.MLCP.from_matrix(np.eye(2), [1.0, 1.0], n)
    assert e.value.field == "n"


def _fclib_declaring(path, where, entries, *, nz=5, size=3, compressed=False, q_size=None):
    """A valid 1-contact FCLIB file, except that dataset ``where`` declares ``entries`` entries (HDF5
    keeps a chunked dataset's unwritten chunks unallocated: the file stays a few kB)."""
    import h5py

    with h5py.File(path, "w") as h:
        g_ = h.create_group("fclib_local")
        g_.create_dataset("spacedim", data=np.array([3], dtype=np.int32))
        W = g_.create_group("W")
        for k, v in (("m", size), ("n", size), ("nz", -2 if compressed else nz), ("nzmax", nz)):
            W.create_dataset(k, data=np.array([v], dtype=np.int64))
        arrays = {"W/i": np.array([0, 1, 2, 0, 1]), "W/p": np.array([0, 1, 2, 1, 0]), "W/x": np.ones(5),
                  "vectors/q": np.ones(size if q_size is None else q_size), "vectors/mu": np.array([0.5])}
        if compressed:
            arrays["W/p"] = np.array([0, 2, 4, 5])
        for name, data in arrays.items():
            if name == where:  # chunked: only the chunk written is stored
                d = g_.create_dataset(name, shape=(entries,), dtype=data.dtype, chunks=(min(64, entries),))
                d[:data.size] = data
            else:
                g_.create_dataset(name, data=data)


@pytest.mark.parametrize("where, entries, compressed, message", [
    ("W/x", 3 * 10 ** 9, False, r"/fclib_local/W/x declares 3000000000 entries; a 3x3 matrix"),
    ("W/i", 2 * 10 ** 9, False, r"/fclib_local/W/i declares 2000000000 entries"),
    ("W/x", 3 * 10 ** 9, True, r"/fclib_local/W/x declares 3000000000 entries"),
    ("W/p", 2 * 10 ** 9, True, r"/fclib_local/W/p declares 2000000000 entries; .* has at most 4"),
    ("vectors/mu", 2 * 10 ** 9, False, r"/fclib_local/vectors/mu has 2000000000 entries: q \(3 entries\) "
                                       r"implies 1 contacts"),
    ("vectors/q", 3 * 10 ** 9, False, r"/fclib_local/vectors/mu has 1 entries: q \(3000000000 entries\)"),
])
def test_fclib_datasets_declaring_billions_of_entries(tmp_path, where, entries, compressed, message):
    """The issue's few-kB files whose datasets declare 2e9-3e9 entries made the reader ask for 15-22 GiB:
    each dataset's declared size is checked against the problem's sizes before it is read."""
    import tracemalloc

    f = tmp_path / "huge.hdf5"
    _fclib_declaring(f, where, entries, compressed=compressed)
    assert f.stat().st_size < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=message):
            io.load(f)
        with pytest.raises(FormatError, match=message):
            io.read_fclib(f, with_solution=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2 ** 20, peak


def test_fclib_arrays_longer_than_nz_read_no_further(tmp_path):
    """Triplet arrays may be longer than nz (FCLIB's nzmax): only nz entries are read."""
    f = tmp_path / "long.hdf5"
    _fclib_declaring(f, "W/x", 9)
    p = io.load(f)
    np.testing.assert_array_equal(p.W.toarray(), [[1, 1, 0], [1, 1, 0], [0, 0, 1]])


def test_fclib_consistent_but_absurd_sizes_are_refused_by_the_file_size(tmp_path):
    """Sizes that all agree (q, W and mu of 1e9 contacts) in a few-kB file: the last guard compares the
    bytes to read with the file's size."""
    import h5py

    n = 3 * 10 ** 8
    f = tmp_path / "consistent.hdf5"
    with h5py.File(f, "w") as h:
        g_ = h.create_group("fclib_local")
        g_.create_dataset("spacedim", data=np.array([3], dtype=np.int32))
        W = g_.create_group("W")
        for k, v in (("m", n), ("n", n), ("nz", 1), ("nzmax", 1)):
            W.create_dataset(k, data=np.array([v], dtype=np.int64))
        for k, v in (("i", [0]), ("p", [0]), ("x", [1.0])):
            W.create_dataset(k, data=np.array(v))
        g_.create_dataset("vectors/q", shape=(n,), dtype=float, chunks=(64,))
        g_.create_dataset("vectors/mu", shape=(n // 3,), dtype=float, chunks=(64,))
    with pytest.raises(FormatError, match=r"/fclib_local/vectors/q declares 300000000 entries \(2.24 GiB to read\) "
                                          r"in a file of \d+ bytes: corrupt file"):
        io.load(f)
