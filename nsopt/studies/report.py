"""The report of a campaign folder: ``summary.csv``, the performance profiles and the error
history, drawn from the stored results (:func:`write_report`, ``nsopt report``), by the kept
drawer process (:class:`Drawer`) when there is one."""

from __future__ import annotations

import json
import os
import signal
import warnings
from pathlib import Path

from .._extras import require
from . import files, records
from .profiles import history_figure, summary
from .runner import fork, on_shutdown, start_method
from .worker import read_frame, write_frame

DRAW_MODULES = ("matplotlib.figure", "matplotlib.backends.backend_agg", "matplotlib.backends.backend_svg")


class Drawer:
    """A process that draws the report's figures, forked at the start of a campaign's run: it
    imports matplotlib (~0.7 s) while this process imports pandas and pyarrow for the tables (the
    two imports on two cores instead of one after the other), then draws what it is sent (plain
    arrays: no pandas there) while this process writes the tables. Like the workers it is kept for
    the next campaigns of the process (:meth:`get`; stopped at exit or by :func:`shutdown`). It
    ignores Ctrl-C and ends when this process closes its pipe (or dies). ``NSOPT_DRAWER=0``: no
    drawer, the figures are drawn in the campaign's process."""

    _kept = None

    def __init__(self, pid: int, wfile, rfd: int):
        self.pid, self.wfile, self.rfd = pid, wfile, rfd

    @classmethod
    def get(cls):
        """The kept drawer, else a new one; None where this process may not fork (threads, no
        fork) or ``NSOPT_DRAWER=0``."""
        d = cls._kept
        if d is not None and d.alive:
            return d
        cls._kept = None
        if start_method() != "fork" or os.environ.get("NSOPT_DRAWER", "1") == "0":
            return None
        r_job, w_job = os.pipe()
        r_ans, w_ans = os.pipe()
        pid = fork()
        if pid == 0:
            code = 1
            try:
                os.close(w_job)
                os.close(r_ans)
                code = _drawer_main(r_job, w_ans)
            finally:
                os._exit(code)
        os.close(r_job)
        os.close(w_ans)
        cls._kept = cls(pid, os.fdopen(w_job, "wb"), r_ans)
        return cls._kept

    @property
    def alive(self) -> bool:
        if self.pid is None:
            return False
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == 0
        except ChildProcessError:
            return False

    def draw(self, jobs) -> bool:
        """Send the jobs (``[(kind, data, paths)]``, see :func:`figure`) and
        wait until they are drawn; True when the drawer says every file was written."""
        if self.pid is None:
            return False
        try:
            write_frame(self.wfile, jobs)
            ok = os.read(self.rfd, 1) == b"\x00"
        except (OSError, ValueError):
            ok = False
        if not ok:
            self.close()
        return ok

    def close(self) -> None:
        """End the drawer (killed: between two reports it holds nothing) and reap it."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.pid = None
        for f in (self.wfile,):
            try:
                f.close()
            except OSError:
                pass
        try:
            os.close(self.rfd)
        except OSError:
            pass
        if Drawer._kept is self:
            Drawer._kept = None


def _drawer_main(rfd: int, wfd: int) -> int:
    """The drawer's body: leave the parent's descriptors, import matplotlib, draw what arrives and
    answer one byte per report (0: done)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lo = 3
    for fd in sorted((rfd, wfd)) + [None]:
        os.closerange(lo, fd if fd is not None else os.sysconf("SC_OPEN_MAX"))
        lo = (fd or 0) + 1
    import matplotlib.backends.backend_agg  # noqa: F401  (DRAW_MODULES)
    import matplotlib.backends.backend_svg  # noqa: F401
    import matplotlib.figure  # noqa: F401

    from .profiles import warm_up_drawing

    warm_up_drawing()
    inp = os.fdopen(rfd, "rb")
    while True:
        jobs = read_frame(inp)
        if jobs is None:
            return 0
        try:
            draw_jobs(jobs)
            answer = b"\x00"
        except Exception:  # noqa: BLE001  (the parent draws them itself)
            answer = b"\x01"
        os.write(wfd, answer)


def _stop_drawer():
    if Drawer._kept is not None:
        Drawer._kept.close()


on_shutdown(_stop_drawer)


def write_report(folder, df=None, drawer=None) -> list[Path]:
    """Write ``summary.csv``, the performance profiles (time, iterations ``nit``; PNG and SVG) and the
    error-history plot of a campaign folder from its stored results; returns the paths written.

    The figures are drawn by ``drawer`` (a :class:`Drawer`, forked or kept
    by the campaign while it runs) when given and alive, else here, two at a time where the process may fork (POSIX,
    no other thread: a child process draws the time profile while this one draws the others; each
    figure costs ~0.1-0.2 s per format). ``df.attrs["summary"]`` is set to the summary table.

    Parameters
    ----------
    folder : str or path-like
        The campaign folder.
    df : pandas.DataFrame, optional
        Its results (default: :func:`load_results` of ``folder``).
    drawer : Drawer, optional
        A drawing process kept by the campaign.

    Returns
    -------
    list of pathlib.Path
        The files written (the history plot only when ``history.json`` is in the folder).

    Raises
    ------
    FileNotFoundError
        When ``df`` is None and ``folder`` is not a campaign folder.

    Examples
    --------
    See the example of :func:`~nsopt.studies.load_results` (a folder of one record and its report).
    """
    require("studies", "nsopt.studies.write_report()")
    folder = Path(folder)
    if df is None:
        df = records.load_results(folder)
    written = []
    summ = summary(df)
    summ.to_csv(folder / "summary.csv", index=False)
    df.attrs["summary"] = summ
    written.append(folder / "summary.csv")
    jobs = []
    if len(df):
        from .profiles import profile_panels

        for measure in ("time", "nit"):
            jobs.append(("profile", (profile_panels(df, measure), measure),
                         [folder / f"profile_{measure}.{ext}" for ext in ("png", "svg")]))
    hj = folder / "history.json"
    if hj.is_file():
        h = json.loads(hj.read_text())
        jobs.append(("history", (h["histories"], files.short_name(h["problem"]), h.get("tol")),
                     [folder / f"history.{ext}" for ext in ("png", "svg")]))
    if drawer is None or not drawer.draw(jobs) or not all(p.is_file() for _, _, ps in jobs for p in ps):
        draw_jobs(jobs)
    for _, _, paths in jobs:
        written += paths
    return written


def figure(job):
    """The figure of a report job ``(kind, data, paths)``: ``("profile", (panels, measure), ...)``
    (:func:`~nsopt.studies.profiles.profile_panels`) or ``("history", (histories, problem, tol),
    ...)``."""
    from .profiles import draw_profile

    kind, data, _ = job
    return draw_profile(*data) if kind == "profile" else history_figure(*data)


def _save(job) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = figure(job)
        for p in job[2]:
            fig.savefig(p, dpi=110)


def draw_jobs(jobs) -> None:
    """Draw the report jobs: the first in a forked child when there are several and the process
    may fork, the rest here; the child's figure is drawn here if the child failed."""
    import threading

    child = None
    if len(jobs) > 1 and hasattr(os, "fork") and threading.active_count() == 1:
        child = fork()
        if child == 0:
            code = 1
            try:
                _save(jobs[0])
                code = 0
            except BaseException:  # noqa: BLE001  (redrawn by the parent)
                pass
            finally:
                os._exit(code)
    for job in jobs[1:] if child else jobs:
        _save(job)
    if child:
        _, status = os.waitpid(child, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            _save(jobs[0])
