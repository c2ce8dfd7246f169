"""Time stepping (Siconos ``TimeStepping``): one OSNS problem per step, solved by :func:`nsopt.solve`,
and the :class:`Trajectory` it records."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..exceptions import ModelingError, StepFailed
from ..problems import AVI, LCP, MLCP, Equality, FrictionContact, GenericMechanical, GlobalFrictionContact, Relay
from ..result import Status
from ..solve import solve
from ._check import label, scalar
from .interactions import NonSmoothDynamicalSystem
from .osi import EulerMoreauOSI, MoreauJeanOSI

# the clock of Trajectory.solve_time (cheap: a wall clock); a benchmark on a shared machine may set
# time.thread_time, which leaves out the time the thread was not running (about 1 µs per call)
SOLVE_CLOCK = time.perf_counter

OSNS_KINDS = ("lcp", "mlcp", "relay", "avi", "equality", "fc2d", "fc3d", "gfc3d", "gmp")

# which block kinds each OSNS kind can hold
_HOLDS = {
    "lcp": {"lcp"}, "mlcp": {"lcp", "equality"}, "relay": {"relay"}, "avi": {"avi", "lcp"},
    "equality": {"equality"}, "fc2d": {"fc2d"}, "fc3d": {"fc3d"}, "gfc3d": {"fc3d"},
    "gmp": {"lcp", "equality", "relay", "fc2d", "fc3d"},
}


# method="auto" inside the loop: one named method per kind and a fallback list (the policy's "auto"
# may build a CVXPY program per call, too slow for thousands of small steps)
STEP_METHODS = {
    "lcp": ("lemke", "newton-fb", "pgs"), "mlcp": ("lemke", "newton-fb", "pgs"), "relay": ("lemke", "pgs", "qp"),
    "avi": ("lemke", "qp"), "equality": ("linear",), "fc2d": ("nsn-ac", "nsgs", "lemke"),
    "fc3d": ("nsn-ac", "nsgs", "prox"), "gfc3d": ("nsn-ac", "nsgs"), "gmp": ("nsgs",),
}


# one-step problem kinds added by other modeling modules (nsopt.modeling.impact adds "multiple-impact"):
# kind -> builder(asm, laws, previous) -> problem (previous: the last step's problem when asm.W is None,
# i.e. same active set and constant operators); the module also fills _HOLDS[kind] and STEP_METHODS[kind]
OSNS_BUILDERS: dict = {}


def infer_osns(blocks: set) -> str:
    """The smallest OSNS kind that holds every block kind in ``blocks``."""
    for kind in ("lcp", "equality", "relay", "fc2d", "fc3d", "mlcp", "avi", "gmp", *OSNS_BUILDERS):
        if blocks <= _HOLDS[kind]:
            return kind
    return "gmp"


def _new_workspace():
    """An ``nsopt.Workspace`` (the methods' built state kept between solves of problems sharing W),
    where the installed nsopt has one; None otherwise."""
    try:
        from ..monitor import Workspace
    except ImportError:
        return None
    return Workspace()


class TimeStepping:
    """Time-stepping simulation of a :class:`NonSmoothDynamicalSystem` (Siconos ``TimeStepping``).

    Parameters
    ----------
    nsds : the systems and interactions, over [t0, T].
    h : time step (> 0).
    integrator : :class:`MoreauJeanOSI` (Lagrangian systems) or :class:`EulerMoreauOSI` (first
        order); None: the one that fits, with θ = 1/2.
    osns : the one-step problem kind: ``"lcp"``, ``"mlcp"``, ``"relay"``, ``"avi"``, ``"equality"``,
        ``"fc2d"``, ``"fc3d"``, ``"gfc3d"``, ``"gmp"``; None: the smallest kind that holds the laws.
    method, tol, **options : handed to :func:`nsopt.solve` at every step. ``method="auto"`` names one
        method per kind (``STEP_METHODS``: Lemke for LCP/MLCP/Relay/AVI, Newton (nsn-ac) for friction,
        nsgs for GenericMechanical) with the others of that list as fallback.
    fallback : methods tried in order when ``method`` does not reach ``tol`` on a step.
    on_failure : ``"continue"`` (record the step's status and go on) or ``"raise"``
        (:class:`~nsopt.exceptions.StepFailed`).
    newton_tol, newton_max_iter : the Newton loop around the OSNS solve (nonlinear systems or relations).
    warm_start : start each solve from the previous step's λ (True by default).
    keep_problems : keep every step's OSNS problem in the trajectory (for :meth:`Trajectory.to_fclib`).
    progress : show a tqdm progress bar in :meth:`run`.

    The OSNS problem is rebuilt only when the active set changes or an operator is not constant;
    otherwise the previous one is reused with ``problem.replace(q=...)`` (its caches and
    factorisations shared). ``sim.step()`` advances one step; ``sim.run()`` to T.
    """

    def __init__(self, nsds: NonSmoothDynamicalSystem, h: float, integrator=None, osns: str | None = None,
                 method: str = "auto", tol: float = 1e-8, *, fallback=(), on_failure: str = "continue",
                 newton_tol: float = 1e-6, newton_max_iter: int = 50, warm_start: bool = True,
                 keep_problems: bool = False, progress: bool = False, name=None, **options):
        self.name = name
        o = label(self)
        if not isinstance(nsds, NonSmoothDynamicalSystem):
            raise ModelingError(o, "nsds", f"expected a NonSmoothDynamicalSystem, got {type(nsds).__name__}")
        if isinstance(h, bool) or not isinstance(h, (int, float, np.floating)) or not math.isfinite(h) or h <= 0:
            raise ModelingError(o, "h", f"time step must be a finite number > 0, got {h!r}")
        if not nsds.dynamical_systems:
            raise ModelingError(o, "nsds", "holds no dynamical system")
        self.nsds, self.h = nsds, float(h)
        order = nsds.order
        if integrator is None:
            integrator = MoreauJeanOSI(0.5) if order == 2 else EulerMoreauOSI(0.5)
        if not isinstance(integrator, (MoreauJeanOSI, EulerMoreauOSI)) and not hasattr(integrator, "step"):
            raise ModelingError(o, "integrator", f"expected MoreauJeanOSI or EulerMoreauOSI, got {type(integrator).__name__}")
        if getattr(integrator, "order", order) != order:
            kinds = {1: "first-order", 2: "Lagrangian"}
            raise ModelingError(o, "integrator", f"{label(integrator)} integrates {kinds[integrator.order]} systems, "
                                                 f"but the systems are {kinds[order]}")
        self.integrator = integrator
        blocks = {i.nslaw.block for i in nsds.interactions}
        if osns is None:
            osns = infer_osns(blocks) if blocks else "lcp"
        if osns not in OSNS_KINDS and osns not in OSNS_BUILDERS:
            raise ModelingError(o, "osns", f"unknown one-step problem kind {osns!r}; expected one of {OSNS_KINDS}")
        bad = blocks - _HOLDS[osns]
        if bad:
            raise ModelingError(o, "osns", f"a {osns!r} problem cannot hold the laws of block kind(s) {sorted(bad)}; "
                                           f"use osns={infer_osns(blocks)!r}")
        if osns == "gfc3d" and order != 2:
            raise ModelingError(o, "osns", "a global friction-contact problem needs Lagrangian systems")
        if on_failure not in ("raise", "continue"):
            raise ModelingError(o, "on_failure", f"must be 'raise' or 'continue', got {on_failure!r}")
        self.osns_kind = osns
        if method == "auto":
            method, *rest = STEP_METHODS[osns]
            fallback = tuple(fallback) or tuple(rest)
        self.method, self.tol, self.options = method, tol, dict(options)
        self.fallback = tuple(fallback)
        self.on_failure = on_failure
        self.newton_tol = scalar(newton_tol, o, "newton_tol", low=0.0, low_open=True)
        if isinstance(newton_max_iter, bool) or not isinstance(newton_max_iter, int) or newton_max_iter < 1:
            raise ModelingError(o, "newton_max_iter", f"must be a positive integer, got {newton_max_iter!r}")
        self.newton_max_iter = newton_max_iter
        self.warm_start, self.keep_problems, self.progress = warm_start, keep_problems, progress
        self.t0, self.T = nsds.t0, nsds.T
        self.n_steps = int(math.floor((self.T - self.t0) / self.h + 1e-9))
        self._check_state()
        self.t, self.k = self.t0, 0
        self._problem = None       # (key, problem) of the last assembly
        self._write = None
        self._solve_time = 0.0
        self._last = None
        self._opts = (None, None)  # (self.options, the options handed to nsopt.solve with the run's Workspace)
        self._ws = None
        integrator.initialize(self)
        self.trajectory = Trajectory(self)

    # ------------------------------------------------------------------ checks
    def _check_state(self):
        for ds in self.nsds.dynamical_systems:
            for fld in (("x",) if ds.order == 1 else ("q", "v")):
                val = np.asarray(getattr(ds, fld), dtype=float)
                if val.shape != (ds.n,) or not np.all(np.isfinite(val)):
                    raise ModelingError(label(ds), fld, "state has non-finite entries (nan or inf)"
                                        if val.shape == (ds.n,) else f"state has shape {val.shape}, expected ({ds.n},)")

    # ------------------------------------------------------------------ the OSNS problem
    def _build(self, asm):
        return _BUILDERS[self.osns_kind](asm)

    def solve_assembly(self, asm):
        """Build (or reuse) the step's problem, solve it, return the stacked λ; records the step."""
        prev = self._problem
        reuse = asm.W is None and asm.glob is None and prev is not None and prev[0] == asm.key
        if self.osns_kind in OSNS_BUILDERS:
            problem = OSNS_BUILDERS[self.osns_kind](asm, _laws(asm), prev[1] if reuse else None)
        elif reuse:
            problem = prev[1].replace(q=asm.q)
        else:
            problem = self._build(asm)
        self._problem = (asm.key, problem)
        warm = None
        if self.warm_start:
            warm = asm.warm if asm.warm is not None else np.concatenate(
                [getattr(i, "_lam_warm", np.zeros(i.size)) for i in asm.interactions])
        lam = self._solve(problem, warm)
        if asm.warm is None:             # else the integrator stores λ in its stacked warm starts
            off = 0
            for i in asm.interactions:
                i._lam_warm = lam[off:off + i.size]
                off += i.size
        return lam

    def resolve(self, key, q, warm):
        """:meth:`solve_assembly` of a step whose problem is the last one's with a new ``q`` (same
        ``key``, constant operators: W unchanged), the integrator keeping the warm starts (``warm``):
        ``previous.replace(q=q)``, solved; returns λ, or None when the last problem is not that one
        (the caller then hands over an Assembly)."""
        prev = self._problem
        if prev is None or prev[0] != key or self.osns_kind in OSNS_BUILDERS:
            return None
        problem = prev[1].replace(q=q)
        self._problem = (key, problem)
        return self._solve(problem, warm if self.warm_start else None)

    def _solve(self, problem, warm):
        """Solve the step's problem with the method, its fallbacks and one Workspace for the whole run
        (its re-solve plans rebuild what depends on W when W changes); returns λ; records the step."""
        if warm is not None and not np.count_nonzero(warm):
            warm = None
        src, opts = self._opts
        if src is not self.options:            # first solve, or options replaced since: one Workspace per run
            src = opts = self.options
            if "workspace" not in opts:
                if self._ws is None:
                    self._ws = _new_workspace()
                if self._ws is not None:
                    opts = {**opts, "workspace": self._ws}
            self._opts = (src, opts)
        clock = SOLVE_CLOCK
        t = clock()
        sol = solve(problem, method=self.method, tol=self.tol, warm_start=warm, **opts)
        if self.fallback and not sol.success:
            for m in self.fallback:
                alt = solve(problem, method=m, tol=self.tol, warm_start=warm)
                if alt.error < sol.error or alt.success:
                    sol = alt
                if sol.success:
                    break
        self._solve_time += clock() - t
        lam = getattr(sol, problem.primal)
        if lam.dtype != np.float64:
            lam = lam.astype(float)
        if not sol.success and not np.isfinite(lam).all():      # a solved problem has a finite λ
            lam = np.zeros_like(lam)
        self._last = (problem, sol)
        if self._write is not None:
            self._write_problem(problem, self.k + 1)
        if self.keep_problems:
            self.trajectory.problems[self.k + 1] = problem
        return lam

    def _write_problem(self, problem, k):
        from .. import io

        d = self._write
        if problem.kind in ("fc2d", "fc3d", "gfc3d"):
            io.write_fclib(problem, d / f"step_{k:06d}.hdf5", title=f"{problem.kind} step {k}")
        else:
            io.write_siconos_dat(problem, d / f"step_{k:06d}_{problem.kind}.dat")

    # ------------------------------------------------------------------ stepping
    def has_next_step(self) -> bool:
        return self.k < self.n_steps

    def step(self):
        """Advance one step; returns the step's :class:`nsopt.Solution` (None when no problem was needed)."""
        if not self.has_next_step():
            raise ModelingError(label(self), "T", f"the simulation already reached T = {self.T}")
        self._last = None
        nit, res, conv, _ = self.integrator.step(self)
        self.k += 1
        self.t = self.t0 + self.k * self.h
        tr = self.trajectory
        sol = self._last[1] if self._last is not None else None
        tr._record(self.k, nit, res, conv, sol)
        if sol is not None and not sol.success and self.on_failure == "raise":
            raise StepFailed(f"step {self.k} (t = {self.t:.6g}): the {self.osns_kind} problem was not solved "
                             f"by {sol.method!r}: status {sol.status.value}, error {sol.error:.3e} > tol {self.tol:g}",
                             step=self.k, time=self.t, solution=sol)
        return sol

    def run(self, *, write_problems=None, progress: bool | None = None) -> Trajectory:
        """Run to T; returns the :class:`Trajectory`. ``write_problems``: a folder where each step's
        OSNS problem is written (FCLIB HDF5 for friction problems, Siconos ``.dat`` otherwise)."""
        if write_problems is not None:
            self._write = Path(write_problems)
            self._write.mkdir(parents=True, exist_ok=True)
        show = self.progress if progress is None else progress
        bar = None
        if show:
            from tqdm import tqdm

            bar = tqdm(total=self.n_steps - self.k, desc="time stepping", unit="step")
        forward = getattr(self.integrator, "fast_forward", None)
        width = 3 * sum(ds.n for ds in self.nsds.dynamical_systems) + 4 * sum(i.size for i in self.nsds.interactions)
        chunk = max(16, (1 << 21) // max(1, width))       # rows reserved per free flight: at most ~16 MB
        try:
            while self.has_next_step():
                # after a step that solved a problem the next one usually does too: no free flight tried
                n = forward(self, min(self.n_steps - self.k, chunk)) if forward is not None and self._last is None else 0
                if n:      # steps without contact, taken at once (MoreauJeanOSI.fast_forward)
                    self.trajectory._advance(self.k + 1, n)
                    self.k += n
                    self.t = self.t0 + self.k * self.h
                else:
                    self.step()
                    n = 1
                if bar is not None:
                    bar.update(n)
        finally:
            if bar is not None:
                bar.close()
            self._write = None
        return self.trajectory


CHUNK_BYTES = 1 << 22     # a segment's rows are allocated in blocks of about 4 MB (or the run's remaining rows)
FIRST_ROWS = 8            # a segment's first block: rows (the next ones double)


class _Segment:
    """The steps recorded with one set of systems and interactions (a new one after each link or
    unlink): one row per step from ``start``, the stacked fields side by side (``cols``: their column
    ranges), in chunks of rows allocated as the run goes (no row is copied when more are needed);
    ``data`` is the current chunk, ``used`` its rows written, ``arrays`` its column views."""

    __slots__ = ("_ds", "_inter", "arrays", "chunks", "cols", "count", "data", "fields", "left", "rows", "start",
                 "used")

    def __init__(self, start, systems, inters, sys_fields, left, rows=None):
        """``rows``: (interactions, their first rows, their last rows + 1, width) when the interactions'
        fields are laid out by the integrator (the batched path keeps removed interactions' rows until
        its next full build); else ``inters`` one after the other."""
        self.start, self.count, self.left = start, 0, left
        self._ds = systems                                  # the column tables: at the first look-up
        if rows is None:
            self._inter, m = inters, sum(i.size for i in inters)
        else:
            self._inter, m = rows[:3], rows[3]
        off = sum(ds.n for ds in systems)
        self.fields = [(f, off) for f in sys_fields] + [(f, m) for f in ("y0", "y1", "lam0", "lam1")]
        self.cols, c = {}, 0
        for f, w in self.fields:
            self.cols[f] = (c, c + w)
            c += w
        self.rows = max(FIRST_ROWS, CHUNK_BYTES // (8 * max(1, c)))
        self.chunks, self.data = [], None
        self._alloc(max(1, min(left, FIRST_ROWS)))     # (a contact detection may end it after a few steps)

    @staticmethod
    def _table(objs, size):
        out, a = {}, 0
        for o in objs:
            b = a + size(o)
            out[id(o)] = (a, b)
            a = b
        return out

    @property
    def ds(self) -> dict:
        """id(system) -> its columns (lo, hi) in the systems' fields."""
        if isinstance(self._ds, list):
            self._ds = self._table(self._ds, lambda ds: ds.n)
        return self._ds

    @property
    def inter(self) -> dict:
        """id(interaction) -> its columns (lo, hi) in the interactions' fields."""
        if isinstance(self._inter, list):
            self._inter = self._table(self._inter, lambda i: i.size)
        elif isinstance(self._inter, tuple):
            objs, lo, hi = self._inter
            self._inter = {id(o): (a, b) for o, a, b in zip(objs, lo.tolist(), hi.tolist())}
        return self._inter

    def _alloc(self, n):
        if self.data is not None:
            self.chunks.append((self.data, self.used))
        self.data, self.used = np.empty((n, self.cols[self.fields[-1][0]][1])), 0
        self.arrays = {f: self.data[:, a:b] for f, (a, b) in self.cols.items()}

    def trim(self):
        """Drop the rows never written, when they are more than the rows written."""
        if self.data.shape[0] - self.used > self.used:
            self.data = self.data[:self.used].copy()
            self.arrays = {f: self.data[:, a:b] for f, (a, b) in self.cols.items()}

    def reserve(self, n):
        """Room for n more rows in the current chunk (a new chunk when it is full); the index of the first."""
        if self.data.shape[0] < self.used + n:     # chunks double up to ``rows`` (about CHUNK_BYTES)
            self._alloc(max(n, min(self.rows, self.left - self.count, 2 * (self.count + FIRST_ROWS))))
        return self.used

    def advance(self, n):
        """n more rows written in the current chunk."""
        self.used += n
        self.count += n

    def row(self):
        """The index of the next row in the current chunk (a new chunk when it is full)."""
        j = self.reserve(1)
        self.advance(1)
        return j

    def pieces(self, field, lo, hi):
        """The recorded rows of columns lo:hi of ``field``, chunk by chunk, in step order."""
        a = self.cols[field][0]
        for data, used in self.chunks + [(self.data, self.used)]:
            yield data[:used, a + lo:a + hi]


class Trajectory:
    """What a :class:`TimeStepping` records, step by step (row 0: the initial state).

    Accessors: ``t`` (N+1,); ``q(ds)``, ``v(ds)``, ``p(ds)`` (Lagrangian, (N+1, n)); ``x(ds)``, ``r(ds)``
    (first order); ``y(inter, level)``, ``lambda_(inter, level)`` ((N+1, m)). Per step (N entries,
    one per step): ``status`` (a :class:`nsopt.Status`, or None when no problem had to be solved),
    ``error``, ``iterations``, ``method``, ``newton_iterations``, ``newton_residual``,
    ``newton_converged``; ``failed_steps``; ``problems`` (with ``keep_problems=True``).

    Interactions linked after the simulation was built (contact detection) are recorded from the
    step they are linked at, and removed ones until they are removed: their rows are NaN where they
    were not part of the system (rows of steps not simulated yet are zero). The recording is stacked
    (one row of all systems and one of all interactions per step), in segments between topology changes.
    """

    def __init__(self, sim: TimeStepping):
        N = sim.n_steps
        self._sim = sim
        self.t = sim.t0 + sim.h * np.arange(N + 1)
        self._sys_fields = ("x", "r") if sim.nsds.order == 1 else ("q", "v", "p")
        self._segments: list[_Segment] = []
        self._version = None
        self._k = -1
        self.status = [None] * N
        self.error = np.full(N, np.nan)
        self.iterations = np.zeros(N, dtype=int)
        self.method = [None] * N
        self.newton_iterations = np.zeros(N, dtype=int)
        self.newton_residual = np.zeros(N)
        self.newton_converged = np.ones(N, dtype=bool)
        self.problems: dict = {}
        self._store(0)

    def _segment(self, k):
        """The segment recording step k (a new one when the systems or interactions changed)."""
        sim = self._sim
        nsds = sim.nsds
        if self._version != nsds._version or not self._segments:
            if self._segments:                    # the finished segment keeps only its rows
                self._segments[-1].trim()
            osi = sim.integrator
            fast = getattr(osi, "_fast", None)
            rows = (fast.row_layout() if fast is not None and getattr(osi, "_version", None) == nsds._version
                    else None)
            self._segments.append(_Segment(k, list(nsds.dynamical_systems), list(nsds.interactions),
                                           self._sys_fields, sim.n_steps + 1 - k, rows))
            self._version = nsds._version
        return self._segments[-1]

    def _reserve(self, k, n):
        """Room for rows k .. k+n-1 in the current segment: (its stacked rows, index of row k)."""
        seg = self._segment(k)
        j0 = seg.reserve(n)              # may start a new chunk: take the array after it
        return seg.data, j0

    def _advance(self, k, n):
        """Steps k .. k+n-1 were written into the reserved rows by a compiled loop (no OSNS problem)."""
        self._segments[-1].advance(n)
        self._k = k + n - 1
        self.newton_iterations[k - 1:k - 1 + n] = 1

    def _store(self, k):
        seg = self._segments[-1] if self._version == self._sim.nsds._version and self._segments else self._segment(k)
        j = seg.used
        if j < seg.data.shape[0]:
            seg.used, seg.count = j + 1, seg.count + 1
        else:
            j = seg.row()
        osi = self._sim.integrator
        fast = getattr(osi, "_fast", None)
        if fast is not None and getattr(osi, "_version", None) == self._version:
            seg.data[j] = fast.buf               # the batched path keeps the row stacked already
        else:
            nsds = self._sim.nsds
            arr = seg.arrays
            cat = (lambda parts: np.concatenate(parts) if parts else np.zeros(0))
            for f in self._sys_fields:
                arr[f][j] = cat([getattr(ds, f) for ds in nsds.dynamical_systems])
            its = nsds.interactions
            for f, parts in (("y0", [i.y[0] for i in its]), ("y1", [i.y[1] for i in its]),
                             ("lam0", [i.lambda_[0] for i in its]), ("lam1", [i.lambda_[1] for i in its])):
                arr[f][j] = cat(parts)
        self._k = k

    def _record(self, k, nit, res, conv, sol):
        self._store(k)
        j = k - 1
        if nit != 1 or res != 0.0 or not conv:
            self.newton_iterations[j], self.newton_residual[j], self.newton_converged[j] = nit, res, conv
        else:
            self.newton_iterations[j] = 1            # (the residual 0 and converged True are the defaults)
        if sol is not None:
            self.status[j], self.error[j], self.iterations[j], self.method[j] = sol.status, sol.error, sol.nit, sol.method

    def _gather(self, obj, what, table, field, width):
        """(N+1, width) rows of ``field`` for ``obj`` over the segments holding it; NaN at the simulated
        steps where it was not part of the system, zero at the steps not simulated yet."""
        out = np.zeros((self.t.shape[0], width))
        out[:self._k + 1] = np.nan
        found = False
        for seg in self._segments:
            span = getattr(seg, table).get(id(obj))
            if span is None:
                continue
            found = True
            r = seg.start
            for rows in seg.pieces(field, *span):
                out[r:r + rows.shape[0]] = rows
                r += rows.shape[0]
        if not found:
            raise ModelingError("Trajectory", what, f"{label(obj)} is not part of this simulation")
        return out

    def _ds_field(self, ds, f):
        if f not in self._sys_fields:
            if not any(id(ds) in seg.ds for seg in self._segments):
                raise ModelingError("Trajectory", f, f"{label(ds)} is not part of this simulation")
            raise ModelingError("Trajectory", f, f"{label(ds)} has no {f!r} (first-order systems have x, r; "
                                                 "Lagrangian ones q, v, p)")
        return self._gather(ds, f, "ds", f, ds.n)

    def q(self, ds):
        """Positions (N+1, n) of a Lagrangian system."""
        return self._ds_field(ds, "q")

    def v(self, ds):
        """Velocities (N+1, n) of a Lagrangian system."""
        return self._ds_field(ds, "v")

    def p(self, ds):
        """Input impulse p = Σ G0ᵀλ over each step (N+1, n) of a Lagrangian system."""
        return self._ds_field(ds, "p")

    def x(self, ds):
        """State (N+1, n) of a first-order system."""
        return self._ds_field(ds, "x")

    def r(self, ds):
        """Input r (N+1, n) of a first-order system."""
        return self._ds_field(ds, "r")

    def _level(self, level):
        if level not in (0, 1):
            raise ModelingError("Trajectory", "level", f"must be 0 or 1, got {level!r}")
        return level

    def y(self, inter, level=0):
        """Output y[level] (N+1, m) of an interaction: level 0 the gap (or y), level 1 its velocity."""
        return self._gather(inter, "y", "inter", f"y{self._level(level)}", inter.size)

    def lambda_(self, inter, level=None):
        """Multiplier λ[level] (N+1, m): level 1 the impulse over each step (Lagrangian), level 0 λ
        (first order; the force for compliant relations). Default: 1 for Lagrangian, 0 for first order."""
        if level is None:
            level = 1 if self._sim.nsds.order == 2 else 0
        return self._gather(inter, "lambda_", "inter", f"lam{self._level(level)}", inter.size)

    @property
    def failed_steps(self) -> list[int]:
        """Steps (1-based) whose OSNS problem did not reach the tolerance."""
        return [j + 1 for j, s in enumerate(self.status) if s is not None and s is not Status.SOLVED]

    @property
    def solve_time(self) -> float:
        """Seconds spent in nsopt.solve over the run (by ``simulation.SOLVE_CLOCK``, ``time.perf_counter``
        unless set otherwise; the rest of a step is the modeling layer)."""
        return self._sim._solve_time

    def to_fclib(self, path) -> list[Path]:
        """Write each kept step problem (``keep_problems=True``) in ``path``: FCLIB HDF5 for friction
        problems, Siconos ``.dat`` otherwise. Returns the files written."""
        if not self.problems:
            raise ModelingError("Trajectory", "problems", "no problem was kept: simulate with "
                                                          "TimeStepping(..., keep_problems=True) or run(write_problems=path)")
        from .. import io

        d = Path(path)
        d.mkdir(parents=True, exist_ok=True)
        out = []
        for k, pb in sorted(self.problems.items()):
            if pb.kind in ("fc2d", "fc3d", "gfc3d"):
                out.append(Path(io.write_fclib(pb, d / f"step_{k:06d}.hdf5", title=f"{pb.kind} step {k}")))
            else:
                f = d / f"step_{k:06d}_{pb.kind}.dat"
                io.write_siconos_dat(pb, f)
                out.append(f)
        return out


# ----------------------------------------------------------------------------- OSNS builders
def _laws(asm):
    return asm.laws if asm.laws is not None else [i.nslaw for i in asm.interactions]


def _build_mlcp(asm):
    rows, comp, off = [0], [], 0
    laws = _laws(asm)
    for law in laws:
        off += law.size
        rows.append(off)
        comp.append(law.block != "equality")
    n_eq = sum(law.size for law in laws if law.block == "equality")
    W = asm.W.toarray() if sp.issparse(asm.W) else asm.W
    return MLCP.from_matrix(W, asm.q, n_eq, blocks_rows=rows, blocks_is_comp=comp)


def _build_avi(asm):
    Hs, ks = [], []
    for law in _laws(asm):
        if law.block == "avi":
            Hs.append(law.H)
            ks.append(law.k)
        else:                        # a complementarity block: λ >= 0
            Hs.append(np.eye(law.size))
            ks.append(np.zeros(law.size))
    return AVI(asm.W, asm.q, sp.block_diag(Hs).toarray(), np.concatenate(ks))


def _build_fc(asm, dim):
    """FrictionContact of the step; a W the batched assembly built in validated form, and the μ it
    keeps, are taken as they are (:meth:`nsopt.problems.Problem.assembled`); q is checked."""
    if asm.mu is not None:
        mu, trusted = asm.mu, (("W", "mu") if asm.trusted_W else ("mu",))
    else:
        mu, trusted = np.array([law.mu for law in _laws(asm)]), (("W",) if asm.trusted_W else ())
    if trusted:
        return FrictionContact.assembled(trusted, dim=dim, W=asm.W, q=asm.q, mu=mu)
    return FrictionContact(dim, asm.W, asm.q, mu)


def _build_gfc(asm):
    M, H, qg, b = asm.glob
    return GlobalFrictionContact(M, H, qg, b, [law.mu for law in _laws(asm)], dim=3)


_BUILDERS = {      # the built-in kinds: builder(asm) -> problem
    "lcp": lambda asm: LCP(asm.W, asm.q),
    "equality": lambda asm: Equality(asm.W, asm.q),
    "relay": lambda asm: Relay(asm.W, asm.q, np.concatenate([law.lb for law in _laws(asm)]),
                               np.concatenate([law.ub for law in _laws(asm)])),
    "mlcp": _build_mlcp,
    "avi": _build_avi,
    "fc2d": lambda asm: _build_fc(asm, 2),
    "fc3d": lambda asm: _build_fc(asm, 3),
    "gfc3d": _build_gfc,
    "gmp": lambda asm: GenericMechanical(asm.W, asm.q, [law.gmp_block() for law in _laws(asm)]),
}


def register_osns(kind: str, build, *, holds, methods):
    """Add a one-step problem kind to TimeStepping (as ``nsopt.modeling.impact`` adds
    ``"multiple-impact"``): ``build(asm, laws, previous) -> problem``, where ``asm`` is the step's
    :class:`~nsopt.modeling.osi.Assembly` (W, q over the active interactions, and the operators H,
    v_free and the integrator), ``laws`` their laws, ``previous`` the last step's problem when
    ``asm.W is None`` (same active set, constant operators: reuse its W) and None otherwise; the
    problem's primal variable must be the stacked λ. ``holds``: the law blocks (``NonSmoothLaw.block``)
    it accepts; ``methods``: the names ``method="auto"`` uses (first, then fallbacks)."""
    OSNS_BUILDERS[kind] = build
    _HOLDS[kind] = set(holds)
    STEP_METHODS[kind] = tuple(methods)
