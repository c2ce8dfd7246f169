"""The results of a campaign: an append-as-you-go store that survives ``kill -9``, resumes, and merges.

Each finished run is appended at once as one JSON line to ``records.jsonl`` (the store) and as one
row to ``results.csv`` (a readable mirror, flushed at least every second, rewritten from the store
when the campaign opens and ends); ``results.parquet`` is written from the store at the end and by ``nsopt report``. A row is
identified by its key ``(problem, problem_hash, method, options, tol)``: re-running a campaign skips
every key already in the store (``retry=`` statuses excepted: those runs are done again and the new
row replaces the old one), so a killed campaign loses at most the runs in flight, and
re-running the same command does only what is missing. A line cut short by a kill is dropped when
the store is opened again. Shards run separately (other machines, other days) are combined with
:func:`merge` (``nsopt merge OUT DIR...``): the union of their rows, each key once (the first shard
that has it wins). One campaign writes a folder at a time (a lock on ``.lock``).
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

from .._extras import require

COLUMNS = ("problem", "problem_hash", "kind", "size", "nc", "method", "source", "options", "tol",
           "max_iter", "timeout", "status", "error", "nit", "time", "build_time",
           "load_time", "warmup_time", "peak_rss_mb", "message", "nsopt_version", "versions", "host",
           "finished_at", "runs", "info")
STORE = "records.jsonl"
CSV = "results.csv"
PARQUET = "results.parquet"


_NOW = [None, ""]


def now_utc() -> str:
    """The current UTC time to the second, ISO 8601 (formatted once per second)."""
    sec = int(time.time())
    if sec != _NOW[0]:
        _NOW[0], _NOW[1] = sec, datetime.fromtimestamp(sec, timezone.utc).isoformat(timespec="seconds")
    return _NOW[1]


def task_columns(task: dict) -> dict:
    """The identifying columns of a task's row (the same whoever writes the record)."""
    return {"problem": task["problem"], "problem_hash": task.get("problem_hash"),
            "method": task["method"], "source": task.get("source", "nsopt"),
            "options": task.get("options_key", "{}"), "tol": task["tol"],
            "max_iter": task.get("max_iter"), "timeout": task.get("timeout")}


def failure_record(task: dict, status: str, message: str, info: dict | None = None) -> dict:
    """The record of a run that produced no solution (load error, exception, timeout, crash)."""
    info = info or {}
    return {**task_columns(task), "kind": info.get("kind", task.get("kind")),
            "size": info.get("size"), "nc": info.get("nc"), "status": status, "error": None,
            "nit": None, "time": None, "build_time": None, "peak_rss_mb": None, "message": message,
            "finished_at": now_utc()}


def printable(s):
    """A string any file can hold: the bytes of a file name that is not UTF-8 (which Python decodes
    with surrogate escapes, U+DC80..U+DCFF) written as ``\\xNN`` escapes (``café`` in Latin-1:
    ``caf\\xe9``). Other values are returned as they are."""
    if not isinstance(s, str):
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        try:
            return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return s.encode("utf-8", "backslashreplace").decode("utf-8")


def key(rec: dict) -> tuple:
    """The identity of a row: problem (path and content hash), method, options, tolerance."""
    return (printable(rec["problem"]), rec.get("problem_hash"), rec["method"], rec.get("options") or "{}",
            repr(float(rec["tol"])))


def normalize(rec: dict) -> dict:
    """A worker's record in the table's vocabulary (``info`` as JSON, NaN -> None, text as
    :func:`printable` text; iterations are ``nit``, as on a Solution)."""
    rec = dict(rec)
    _renamed(rec)
    if isinstance(rec.get("info"), dict):     # a worker's info scalars: stored as JSON
        rec["info"] = json.dumps(rec["info"], sort_keys=True, default=str)
    for k, v in rec.items():
        if isinstance(v, float) and math.isnan(v):
            rec[k] = None
        elif isinstance(v, str):
            rec[k] = printable(v)     # a file name that is not UTF-8: results.csv and parquet are
    return rec


def _renamed(rec: dict) -> dict:
    """A record of an earlier nsopt, whose iterations were the column ``iterations``: renamed ``nit``
    in place (old campaign folders still load, report and merge)."""
    if "iterations" in rec and "nit" not in rec:
        rec["nit"] = rec.pop("iterations")
    return rec


def read_records(folder, repair=False) -> list[dict]:
    """The records stored in a campaign folder, each key once; ``repair`` cuts a partial last line."""
    path = Path(folder) / STORE
    if not path.is_file():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        if repair:
            with open(path, "r+b") as f:
                f.truncate(cut)
        data = data[:cut]
    out, bad = {}, 0
    for line in data.decode(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        _renamed(rec)
        out[key(rec)] = rec      # a retried run replaces the earlier one
    out = list(out.values())
    if bad:
        warnings.warn(f"{path}: {bad} unreadable line(s) skipped", stacklevel=2)
    return out


def to_frame(records):
    """The records as a pandas DataFrame, :data:`COLUMNS` first."""
    import pandas as pd

    records = list(records)
    extra = [c for c in dict.fromkeys(k for r in records for k in r) if c not in COLUMNS and c != "history"]
    cols = [*COLUMNS, *extra]
    if not records:
        return pd.DataFrame({c: [] for c in cols}, columns=cols)
    # row tuples: the same dtypes as a dict of columns, in half the time (one inference pass)
    return pd.DataFrame.from_records([tuple(r.get(c) for c in cols) for r in records], columns=cols)


def _lock(folder: Path):
    """An exclusive lock on the campaign folder (one campaign writes a folder at a time); released
    when the file is closed or the process dies."""
    import fcntl

    from ..exceptions import NsoptError

    f = open(folder / ".lock", "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise NsoptError(f"{folder}: another campaign is writing this folder (wait for it, or use "
                         f"another --out)") from None
    return f


def _csv_row(rec):
    return {c: ("" if rec.get(c) is None else rec.get(c)) for c in COLUMNS}


class Store:
    """The append-as-you-go store of one campaign folder (see the module docstring).

    ``folder=None``: the records are kept in memory only (``compare(out=None)``: nothing to resume,
    nothing written). Otherwise each record is appended to ``records.jsonl`` with one ``write`` on a
    descriptor opened with ``O_APPEND`` (no buffer to flush: once :meth:`add` returns, the line is
    the kernel's and survives a ``kill -9`` of the campaign); the ``results.csv`` mirror is buffered
    and flushed at most every :attr:`CSV_FLUSH` seconds (it is rewritten from the store when the
    campaign opens and ends).

    Parameters
    ----------
    folder : str or path-like, optional
        The campaign folder (created if missing; the records already there are read, a torn last
        line repaired). None: in memory only.

    Attributes
    ----------
    records : list of dict
        The stored records.
    keys : set of tuple
        Their keys (problem and its hash, method, options, tolerance).

    Raises
    ------
    NsoptError
        When another campaign is writing the folder (it is locked while the store is open).

    Examples
    --------
    >>> import os, tempfile
    >>> from nsopt.studies import Store
    >>> rec = dict(problem="a.dat", problem_hash="h1", kind="lcp", size=2, method="lemke",
    ...            source="nsopt", tol=1e-8, status="solved", time=0.01, error=1e-12, nit=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with Store(d) as store:
    ...         print(store.add(rec), store.add(rec), len(store.records))
    ...     print(sorted(f for f in os.listdir(d) if not f.startswith(".")))
    True False 1
    ['records.jsonl', 'results.csv']
    """

    CSV_FLUSH = 1.0

    def __init__(self, folder=None):
        self.folder = None if folder is None else Path(folder)
        self.records: list = []
        self.keys: set = set()
        self._fd = self._csv = self._lock = None
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = _lock(self.folder)
        self.records = read_records(self.folder, repair=True)
        self.keys = {key(r) for r in self.records}
        self._write_csv()
        self._fd = os.open(self.folder / STORE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._csv = open(self.folder / CSV, "a", newline="")
        self._writer = csv.DictWriter(self._csv, fieldnames=COLUMNS)
        self._csv_flushed = time.monotonic()

    def _write_csv(self):
        with open(self.folder / CSV, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            for r in self.records:
                w.writerow(_csv_row(r))

    def __contains__(self, k) -> bool:
        return k in self.keys

    def add(self, rec: dict, replace: bool = False) -> bool:
        """Append one record (in the kernel's hands when this returns); False if its key is already
        stored, unless ``replace`` (a retried run: the newer line wins when the store is read)."""
        rec = normalize(rec)
        rec.pop("history", None)
        k = key(rec)
        if k in self.keys:
            if not replace:
                return False
            self.records = [r for r in self.records if key(r) != k]
        if self._fd is not None:
            line = (json.dumps(rec, default=str) + "\n").encode()
            while line:
                line = line[os.write(self._fd, line):]
            self._writer.writerow(_csv_row(rec))
            now = time.monotonic()
            if now - self._csv_flushed > self.CSV_FLUSH:
                self._csv.flush()
                self._csv_flushed = now
        self.keys.add(k)
        self.records.append(rec)
        return True

    def frame(self):
        return to_frame(self.records)

    def export(self):
        """Rewrite ``results.csv`` and ``results.parquet`` from the store."""
        if self.folder is None:
            return
        self._csv.flush()
        self._write_csv()
        write_parquet(self.frame(), self.folder / PARQUET)

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        for f in (self._csv, self._lock):
            if f is not None and not f.closed:
                f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_parquet(df, path):
    df = df.copy()
    for c in ("size", "nc", "nit", "max_iter", "runs"):
        df[c] = df[c].astype("Int64")
    for c in ("error", "time", "build_time", "load_time", "warmup_time", "peak_rss_mb", "tol", "timeout"):
        df[c] = df[c].astype("float64")
    df.to_parquet(path, index=False)


def load_results(*folders):
    """The results of one or several campaign folders as one DataFrame (each key once).

    Parameters
    ----------
    *folders : str or path-like
        Campaign folders (a row whose key is in an earlier folder is skipped).

    Returns
    -------
    pandas.DataFrame
        One row per record, the columns of ``results.csv``.

    Raises
    ------
    FileNotFoundError
        For a folder without ``records.jsonl``.

    Examples
    --------
    A campaign folder of one record, its results, and the report :func:`~nsopt.studies.write_report`
    draws from them:

    >>> import tempfile
    >>> from nsopt.studies import Store, load_results, write_report
    >>> rec = dict(problem="a.dat", problem_hash="h1", kind="lcp", size=2, method="lemke",
    ...            source="nsopt", tol=1e-8, status="solved", time=0.01, error=1e-12, nit=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with Store(d) as store:
    ...         _ = store.add(rec)
    ...     df = load_results(d)
    ...     written = [p.name for p in write_report(d, df=df)]
    >>> df[["method", "status", "nit"]]
      method  status  nit
    0  lemke  solved    3
    >>> written
    ['summary.csv', 'profile_time.png', 'profile_time.svg', 'profile_nit.png', 'profile_nit.svg']
    """
    require("studies", "nsopt.studies.load_results()")
    recs, seen = [], set()
    for d in folders:
        if not (Path(d) / STORE).is_file():
            raise FileNotFoundError(f"{d}: not a campaign folder (no {STORE})")
        for r in read_records(d):
            k = key(r)
            if k not in seen:
                seen.add(k)
                recs.append(r)
    return to_frame(recs)


def merge(out, *folders) -> int:
    """Merge the stores of several campaign folders (shards) into ``out``; returns the rows added.

    Rows whose key is already in ``out`` (or in an earlier shard) are skipped.

    Parameters
    ----------
    out : str or path-like
        The campaign folder merged into (created if missing; its tables are rewritten).
    *folders : str or path-like
        The shards (``out`` itself, if listed, is skipped).

    Returns
    -------
    int
        The number of rows added.

    Raises
    ------
    FileNotFoundError
        For a shard without ``records.jsonl``.

    Examples
    --------
    >>> import os, tempfile
    >>> from nsopt.studies import Store, load_results, merge
    >>> def rec(method):
    ...     return dict(problem="a.dat", problem_hash="h1", kind="lcp", size=2, method=method,
    ...                 source="nsopt", tol=1e-8, status="solved", time=0.01, error=1e-12, nit=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     a, b, out = (os.path.join(d, x) for x in ("a", "b", "out"))
    ...     with Store(a) as s1, Store(b) as s2:
    ...         _ = s1.add(rec("lemke")), s2.add(rec("lemke")), s2.add(rec("psor"))
    ...     print(merge(out, a, b), list(load_results(out)["method"]))
    2 ['lemke', 'psor']
    """
    require("studies", "nsopt.studies.merge()")
    added = 0
    with Store(out) as store:
        for d in folders:
            if Path(d).resolve() == Path(out).resolve():
                continue
            if not (Path(d) / STORE).is_file():
                raise FileNotFoundError(f"{d}: not a campaign folder (no {STORE})")
            for r in read_records(d):
                added += store.add(r)
        store.export()
    return added
