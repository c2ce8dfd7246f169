"""Corrupt, truncated, garbled and unknown files: nsopt.io raises FormatError naming the file (and
the line for text files), never a bare IndexError/ValueError/KeyError, never hangs, and never
allocates memory for sizes the file cannot back."""

from __future__ import annotations

import re
import shutil
import time
import tracemalloc

import numpy as np
import pytest

import nsopt.io as io
from nsopt import generate as g
from nsopt.exceptions import FormatError, ProblemError
from nsopt.io.siconos_dat import READERS, Tokens
from nsopt.problems import FrictionContact

from conftest import need_corpus
from nsopt.data import data_dir, has_data
from conftest import given, HealthCheck, settings, st  # hypothesis' names (property tests skip without it)

# small corpus files covering every reader and storage: dense, SBM, CSparse triplet and CSC
SAMPLES = [
    ("lcp", "lcp/lcp_CPS_1.dat"), ("lcp", "lcp/lcp_ortiz_block.dat"),
    ("mlcp", "mlcp/m2n1_mlcp.dat"),
    ("mlcp", "mlcp/RCD_mlcp.dat"), ("relay", "relay/relay_2x2.dat"),
    ("fc2d", "fc2d/FrictionContactProblem00031.dat"), ("fc3d", "fc3d/FC3D_Example1_SBM.dat"),
    ("fc3d", "fc3d/Rover4396.dat"), ("gfc3d", "gfc3d/GFC3D_Example1.dat"),
    ("gfc2d", "gfc2d/gfc2d_granularflowonwall_00069_00350.dat"), ("gmp", "gmp/GMP5.dat"),
]
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def _sample(i):
    need_corpus()
    kind, rel = SAMPLES[i]
    return kind, data_dir() / rel


def _required_extent(kind, path):
    """Byte offset where the last token the reader needs starts."""
    tk = Tokens(path)
    READERS[kind](path, _tokens=tk)
    text = path.read_bytes().decode("latin-1")
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    return starts[tk.pos - 1]


def _load_or_format_error(path, kind, *, detect=False):
    """Loading either works (a problem of the right type) or raises FormatError naming the file."""
    try:
        p = io.load(path) if detect else io.load(path, kind=kind)
    except FormatError as e:
        assert str(path) in str(e) and e.path == str(path)
        return e
    assert p.kind[-4:] == kind[-4:] or detect
    return p


@pytest.mark.corpus
@SETTINGS
@given(i=st.integers(0, len(SAMPLES) - 1), frac=st.floats(0.0, 1.0))
def test_truncated_files(tmp_path, i, frac):
    kind, path = _sample(i)
    data = path.read_bytes()
    cut = int(frac * len(data))
    dst = tmp_path / path.name
    dst.write_bytes(data[:cut])
    res = _load_or_format_error(dst, kind)
    if cut <= _required_extent(kind, path):
        assert isinstance(res, FormatError), f"truncated at {cut} of {len(data)} but loaded"
        assert res.line is not None
    _load_or_format_error(dst, kind, detect=True)


@pytest.mark.corpus
@SETTINGS
@given(i=st.integers(0, len(SAMPLES) - 1),
       flips=st.lists(st.tuples(st.floats(0.0, 1.0, exclude_max=True), st.integers(0, 255)),
                      min_size=1, max_size=4))
def test_garbled_bytes(tmp_path, i, flips):
    kind, path = _sample(i)
    data = bytearray(path.read_bytes())
    for frac, byte in flips:
        data[int(frac * len(data))] = byte
    dst = tmp_path / path.name
    dst.write_bytes(bytes(data))
    _load_or_format_error(dst, kind)
    _load_or_format_error(dst, kind, detect=True)


GARBAGE = ["abc", "-1", "-7", "0", "1e999", "nan", "inf", "99999999999", "1.5", "3", ":", "col",
           "1_0", "0x10", "\x00", "-0", "2147483648"]


@pytest.mark.corpus
@SETTINGS
@given(i=st.integers(0, len(SAMPLES) - 1), where=st.floats(0.0, 1.0, exclude_max=True),
       junk=st.sampled_from(GARBAGE), replace=st.booleans())
def test_garbled_tokens(tmp_path, i, where, junk, replace):
    kind, path = _sample(i)
    toks = re.split(r"(\s+)", path.read_bytes().decode("latin-1"))
    words = [k for k, t in enumerate(toks) if t and not t.isspace()]
    k = words[int(where * len(words))]
    toks[k] = junk if replace else junk + " " + toks[k]
    dst = tmp_path / path.name
    dst.write_bytes("".join(toks).encode("latin-1"))
    _load_or_format_error(dst, kind)


def test_random_binary_and_text(tmp_path):
    rng = np.random.default_rng(0)
    for k in range(20):
        f = tmp_path / f"junk{k}.dat"
        size = int(rng.integers(0, 400))
        f.write_bytes(rng.integers(0, 256, size=size, dtype=np.uint8).tobytes())
        with pytest.raises(FormatError):
            io.load(f)
    for text in ("", "\n\n", "hello world\n", "3 0 3 3 3 3 1 2", "1 2 3 4 5 6 7 8 9 10 11 12"):
        f = tmp_path / "t.dat"
        f.write_text(text)
        with pytest.raises(FormatError) as ei:
            io.load(f)
        assert "t.dat" in str(ei.value)
        for kind in io.KINDS:
            with pytest.raises(FormatError):
                io.load(f, kind=kind)


def _peak_mb(fn):
    tracemalloc.start()
    t = time.perf_counter()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak / 2**20, time.perf_counter() - t


def test_huge_declared_sizes_do_not_allocate(tmp_path):
    cases = {
        "lcp": "2000000000\n0\n2000000000\n2000000000\n2000000000\t2000000000\n1 2 3\n",
        "fc3d": "3\n700000000\n0\n2100000000\n2100000000\n2100000000\t2100000000\n1 2\n",
        "gfc3d": "3\n1\n2\n90000000\n90000000\n1\nCSparse\ntriplet: 90000000-by-90000000, "
                 "nzmax: 90000000 nnz: 90000000\n 0 0 : 1\n",
        "mlcp": "1\n1\n1000000000\n1000000000\n0 1000000000 2000000000\n0 1\n0\n5\n5\n5\t5\n1\n",
        "gmp": "1\n6\n6\n400000000\n300000000\n300000000\n1 2 3\n",
    }
    for kind, text in cases.items():
        f = tmp_path / f"{kind}.dat"
        f.write_text(text)

        def run():
            with pytest.raises(FormatError) as ei:
                io.load(f, kind=kind)
            assert f.name in str(ei.value) and ei.value.line is not None
        peak, dt = _peak_mb(run)
        assert peak < 20 and dt < 5, (kind, peak, dt)
    # sizes each plausible, but whose product is not backed by the file: no n*n allocation
    n = 3000
    f = tmp_path / "big.dat"
    f.write_text(f"{n}\n0\n{n}\n{n}\n{n}\t{n}\n" + " ".join(["1.0"] * (2 * n)) + "\n")

    def run():
        with pytest.raises(FormatError, match="ends early"):
            io.load(f, kind="lcp")
    peak, dt = _peak_mb(run)
    assert peak < 20 and dt < 5


def test_problem_errors_become_format_errors(tmp_path):
    p = g.friction_contact(2, 3, seed=0)[0]
    f = io.write_siconos_dat(FrictionContact(3, p.W, p.q, [0.3, 0.4]), tmp_path / "fc.dat")
    text = f.read_text().rsplit("\n", 2)
    f.write_text(text[0] + "\n" + text[1].replace("4.0000", "-4.0000") + "\n")
    with pytest.raises(FormatError, match="friction coefficient") as ei:
        io.load(f, kind="fc3d")
    assert isinstance(ei.value.__cause__, ProblemError)
    with pytest.raises(FormatError, match="friction coefficient"):
        io.load(f)                    # kind detection reports the same fault
    assert "fc.dat" in str(ei.value)
    # nan in a matrix
    lcp = io.write_siconos_dat(g.lcp(3)[0], tmp_path / "lcp.dat")
    lines = lcp.read_text().splitlines()
    lines[5] = "nan " + lines[5].split(None, 1)[1]
    lcp.write_text("\n".join(lines))
    with pytest.raises(FormatError, match="non-finite") as ei:
        io.load(lcp, kind="lcp")
    assert isinstance(ei.value.__cause__, ProblemError)


def test_error_names_the_line(tmp_path):
    f = io.write_siconos_dat(g.lcp(3)[0], tmp_path / "lcp.dat")
    lines = f.read_text().splitlines()
    lines[6] = lines[6].replace("e", "x", 1)          # 7th line: second column of M
    f.write_text("\n".join(lines))
    with pytest.raises(FormatError) as ei:
        io.load(f, kind="lcp")
    assert ei.value.line == 7 and "line 7" in str(ei.value)
    # unknown storage type
    lines = io.write_siconos_dat(g.lcp(3)[0], f, overwrite=True).read_text().splitlines()
    lines[1] = "7"
    f.write_text("\n".join(lines))
    with pytest.raises(FormatError, match="storage") as ei:
        io.load(f, kind="lcp")
    assert ei.value.line == 2


def test_sbm_block_numbering_and_structure(tmp_path, corpus):
    text = (corpus / "lcp" / "lcp_ortiz_block.dat").read_text().splitlines()
    bad = list(text)
    k = bad.index("1", 16)            # second block number (after the SBM header)
    bad[k] = "2"
    f = tmp_path / "b.dat"
    f.write_text("\n".join(bad))
    with pytest.raises(FormatError, match="block numbering") as ei:
        io.load(f, kind="lcp")
    assert ei.value.line == k + 1
    bad = list(text)
    bad[7] = "2\t5\t"                 # cumulative row sizes not ending at 4
    f.write_text("\n".join(bad))
    with pytest.raises(FormatError, match="cumulative"):
        io.load(f, kind="lcp")


def test_gmp_unsupported_blocks(tmp_path, corpus):
    text = (corpus / "gmp" / "GMP0.dat").read_text().rstrip().splitlines()
    assert text[-1] == "0"
    for t, msg in (("9", "relay"), ("3", "FC2D"), ("1", "not allowed"), ("42", "unknown")):
        f = tmp_path / "gmp.dat"
        f.write_text("\n".join(text[:-1] + [t]) + "\n")
        with pytest.raises(FormatError, match=msg):
            io.load(f, kind="gmp")


def test_unknown_kinds_and_folders(tmp_path):
    with pytest.raises(FileNotFoundError):            # an OSError, not a FormatError
        io.load(tmp_path / "missing.dat", kind="lcp")
    f = io.write_siconos_dat(g.lcp(3)[0], tmp_path / "x.dat")
    with pytest.raises(FormatError, match="unknown problem kind"):
        io.load(f, kind="ncp")
    d = tmp_path / "SOCP"
    d.mkdir()
    shutil.copy(f, d / "x.dat")
    with pytest.raises(FormatError, match="not supported"):
        io.load(d / "x.dat")


def _h5(tmp_path, name, build):
    import h5py

    f = tmp_path / name
    with h5py.File(f, "w") as h:
        build(h)
    return f


def test_fclib_corrupt(tmp_path):
    import h5py

    p = g.friction_contact(3, 3, seed=1)[0]
    good = io.write_fclib(p, tmp_path / "good.hdf5")
    # truncated HDF5 files
    data = good.read_bytes()
    for cut in (0, 8, 100, len(data) // 2, len(data) - 10):
        f = tmp_path / f"cut{cut}.hdf5"
        f.write_bytes(data[:cut])
        with pytest.raises(FormatError) as ei:
            io.load(f)
        assert f.name in str(ei.value)
    # not an FCLIB group / missing datasets / bad nz / wrong sizes / rolling / unsupported
    f = _h5(tmp_path, "empty.hdf5", lambda h: h.create_group("foo"))
    with pytest.raises(FormatError, match="without an FCLIB group"):
        io.load(f)
    for mutate, msg in [
        (lambda h: h["fclib_local/W"].__delitem__("x"), "missing /fclib_local/W/x"),
        (lambda h: h["fclib_local/W/nz"].__setitem__(0, -5), "nz = -5"),
        (lambda h: h["fclib_local/W/p"].__setitem__(1, 10**6), "pointers"),
        (lambda h: h["fclib_local/W/i"].__setitem__(0, 10**6), "out of range"),
        (lambda h: h["fclib_local/spacedim"].__setitem__(0, 5), "rolling"),
        (lambda h: h["fclib_local/spacedim"].__setitem__(0, 4), "spacedim"),
        (lambda h: h["fclib_local/vectors"].__delitem__("q"), "vectors/q"),
        (lambda h: h["fclib_local/vectors/mu"].__setitem__(0, -1.0), "friction coefficient"),
        (lambda h: h["fclib_local"].create_group("R"), "not supported"),
    ]:
        f = tmp_path / "m.hdf5"
        shutil.copy(good, f)
        with h5py.File(f, "r+") as h:
            mutate(h)
        with pytest.raises(FormatError, match=msg) as ei:
            io.load(f)
        assert "m.hdf5" in str(ei.value)
    # random byte flips in the HDF5 container: FormatError or a valid problem
    rng = np.random.default_rng(1)
    for k in range(15):
        b = bytearray(data)
        for _ in range(3):
            b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        f = tmp_path / f"flip{k}.hdf5"
        f.write_bytes(bytes(b))
        try:
            q = io.load(f)
        except FormatError:
            continue
        assert q.kind == "fc3d"


@pytest.mark.skipif(not has_data(), reason="shared corpus absent")
def test_corpus_hdf5_truncated(tmp_path):
    src = data_dir() / "gfc3d" / "Box_Stacks-i0122-82-5.hdf5"
    data = src.read_bytes()
    for frac in (0.1, 0.5, 0.9, 0.999):
        f = tmp_path / "t.hdf5"
        f.write_bytes(data[:int(frac * len(data))])
        with pytest.raises(FormatError):
            io.load(f)


# files that end in a single-value vector (mu of one contact, a 1x1 relay's bound, a GMP block's mu), with
# or without a line end after the last number, and a file with a trailing token after its problem
CUT_SAMPLES = ["fc3d/FrictionContact3D_1c.dat", "fc3d/FrictionContact3D_RR_1c.dat",
               "fc2d/FC2D_SliderCrankLagrangian00000.dat", "gfc3d/GFC3D_Example1.dat", "relay/step_1x1.dat",
               "gmp/Example1_Fc3D_SBM.dat", "lcp/lcp_CPS_1.dat"]


def _arrays(p):
    return {k: v for k, v in vars(p).items() if isinstance(v, np.ndarray)} if hasattr(p, "__dict__") else {}


@pytest.mark.corpus
@pytest.mark.parametrize("rel", CUT_SAMPLES)
def test_cut_inside_last_number(tmp_path, rel):
    """A file cut 1..16 bytes before its end either loads to exactly the whole file's problem (only
    whitespace or digits that do not change a value were cut) or raises FormatError: never mu = 0
    for 0.1 (the issue's one-contact FC3D file cut two bytes before its end)."""
    need_corpus()
    src = data_dir() / rel
    whole = io.load(src)
    data = src.read_bytes()
    (tmp_path / src.parent.name).mkdir()
    for cut in range(1, 17):
        dst = tmp_path / src.parent.name / src.name
        dst.write_bytes(data[:-cut])
        try:
            p = io.load(dst)
        except FormatError as e:
            assert str(dst) in str(e)
            continue
        for name, a in _arrays(whole).items():
            np.testing.assert_array_equal(getattr(p, name), a, err_msg=f"{rel} cut {cut} bytes: {name}")
        for name in ("mu", "q", "b"):
            if hasattr(whole, name):
                b = getattr(whole, name)
                np.testing.assert_array_equal(getattr(p, name), b, err_msg=f"{rel} cut {cut} bytes: {name}")


def test_cut_inside_last_number_written(tmp_path):
    """The same without the corpus: one-contact FC3D files as a person writes them (no line end after
    the last number) and as Siconos writes them ("%.24e", a line end)."""
    text = "3\n1\n0\n3 3\n3 3\n1 0 0\n0 1 0\n0 0 1\n\n-1\n2\n3\n\n"
    e24 = "3\n1\n0\n3 3\n3 3\n1 0 0\n0 1 0\n0 0 1\n" + "".join(f"{v:.24e}\n" for v in (-1, 2, 3))
    f = tmp_path / "fc3d_1c.dat"
    # (a hand-written "0.25" cut to "0.2" cannot be told from a whole "0.2": not among these)
    for text, tail, whole_mu in ((text, "0.1", 0.1), (text, "0.1\n", 0.1), (text, "0.6", 0.6),
                                 (e24, "1.000000000000000055511151e-01\n", 0.1),
                                 (e24, "1.000000000000000055511151e-01", 0.1)):
        f.write_text(text + tail)
        assert io.load(f, kind="fc3d").mu.tolist() == [whole_mu]
        for cut in range(1, len(tail)):
            f.write_text(text + tail[:-cut])
            try:
                p = io.load(f, kind="fc3d")
            except FormatError as e:
                assert "cut in the middle of a number" in str(e) or "file ends early" in str(e) or \
                    "expected a number" in str(e), str(e)
                continue
            assert p.mu.tolist() == [whole_mu], (tail, cut)
    # "0" for "0.1", no line end: refused, and the message says how to keep a whole file
    text = "3\n1\n0\n3 3\n3 3\n1 0 0\n0 1 0\n0 0 1\n\n-1\n2\n3\n\n"
    f.write_text(text + "0")
    with pytest.raises(FormatError, match=r"line 14: mu: the last value '0' is printed as an integer.*"
                                          r"if it is whole, end it with a line end"):
        io.load(f, kind="fc3d")
    f.write_text(text + "0\n")
    assert io.load(f, kind="fc3d").mu.tolist() == [0.0]
