r"""Dolan–Moré performance profiles, the per-method summary, and error-history plots.

For a set of problems :math:`P` (one panel per problem kind) and methods :math:`S`, let
:math:`t_{p,s}` be the measure (wall time of the solve, or iterations ``nit``) of method :math:`s` on
problem :math:`p` when it is solved (``status == "solved"``: nsopt's error measure reached ``tol``),
and :math:`+\infty` otherwise (any other status, including ``timeout``, ``crashed``, ``load_error``,
and a missing row). The performance ratio and the profile are [1]_

.. math::

    r_{p,s} = \frac{t_{p,s}}{\min_{s'} t_{p,s'}}, \qquad
    \rho_s(\tau) = \frac{|\{p \in P : \log_2 r_{p,s} \le \tau\}|}{|P|}.

:math:`\rho_s(0)` is the share of problems on which :math:`s` is the best, :math:`\rho_s(\tau)`
for large :math:`\tau` its share solved. Times below 1 µs count as 1 µs, iteration counts below 1 as
1. Rows with status ``skipped`` (a Siconos solver that does not exist for a kind) are left out.

The summary gives per (kind, method) the share solved, the median time and iterations of the solved
runs, and the shifted geometric mean of the time ratio to the best (qpbenchmark's ``shgeom``) [2]_:

.. math::

    g_s = \exp\Big(\frac{1}{|P'|}\sum_{p \in P'} \log(\bar r_{p,s} + 1)\Big) - 1,

over the problems :math:`P'` that some method solved, where :math:`\bar r_{p,s}` is the ratio with a
failed run counted at the campaign's timeout (10x the kind's slowest solved time without one).
:math:`g_s = 1` for a method that is fastest everywhere.

References
----------
.. [1] E. D. Dolan, J. J. Moré, "Benchmarking optimization software with performance profiles",
   Math. Program. 91 (2002) 201–213.
.. [2] S. Caron et al., qpbenchmark, https://github.com/qpsolvers/qpbenchmark (shifted geometric mean).
"""

from __future__ import annotations

import json
from types import MappingProxyType

import numpy as np

from .._extras import require

MEASURES = MappingProxyType({"time": ("time", 1e-6, "time"), "nit": ("nit", 1.0, "iterations (nit)")})


def method_label(method: str, options: str | None = None) -> str:
    """The display name of a (method, options) pair: ``psor omega=1.2``, ``Siconos NSGS``."""
    name = f"Siconos {method.split(':', 1)[1]}" if method.startswith("siconos:") else method
    try:
        opts = json.loads(options) if options else {}
    except (TypeError, json.JSONDecodeError):
        opts = {}
    if opts:
        name += " " + ",".join(f"{k}={v}" for k, v in sorted(opts.items()))
    return name


def _prepare(results):
    df = results.copy()
    if "iterations" in df.columns and "nit" not in df.columns:    # a table of an earlier nsopt
        df = df.rename(columns={"iterations": "nit"})
    df = df[df["status"] != "skipped"]
    df["label"] = [method_label(m, o) for m, o in zip(df["method"], df["options"])]
    df["kind"] = df["kind"].fillna("?")
    return df


def _measure(measure):
    if measure not in MEASURES:
        from ..exceptions import OptionError

        raise OptionError(f"measure must be one of {list(MEASURES)}, got {measure!r}")
    return MEASURES[measure]


def measure_table(results, measure="time", kind=None):
    """Problems x methods table of the measure, +inf where the method did not solve the problem."""
    col, floor, _ = _measure(measure)
    df = _prepare(results)
    if kind is not None:
        df = df[df["kind"] == kind]
    val = np.where(df["status"] == "solved", np.maximum(df[col].astype(float).fillna(np.inf), floor),
                   np.inf)
    df = df.assign(_v=val)
    table = df.pivot_table(index="problem", columns="label", values="_v", aggfunc="min")
    return table.fillna(np.inf)


def profile_curves(table):
    """``{label: (tau, rho)}`` step curves of a :func:`measure_table` (tau = log2 ratio)."""
    T = table.to_numpy(dtype=float)
    best = np.min(T, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        R = np.where(np.isfinite(T), T / best, np.inf)
    L = np.log2(R)
    out = {}
    for j, lab in enumerate(table.columns):
        taus = np.sort(L[np.isfinite(L[:, j]), j])
        rho = np.arange(1, taus.size + 1) / T.shape[0]
        out[lab] = (taus, rho)
    return out


def performance_profile(results, measure: str = "time", kinds=None, title: str | None = None):
    """Dolan–Moré performance profiles of a results table, one panel per problem kind.

    Parameters
    ----------
    results : DataFrame of :func:`nsopt.studies.compare` (or :func:`load_results`).
    measure : ``"time"`` or ``"nit"`` (iterations).
    kinds : the kinds to draw (default: every kind in the table).

    Returns
    -------
    matplotlib.figure.Figure
        x = :math:`\\log_2` of the ratio to the best, y = share of problems; Siconos' solvers dashed.

    Examples
    --------
    >>> import nsopt, nsopt.studies
    >>> from nsopt.studies.profiles import performance_profile
    >>> probs = [nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, q]) for q in (-6.0, -1.0, 3.0)]
    >>> df = nsopt.studies.compare(probs, methods=["lemke", "pgs"], progress=False, report=False,
    ...                            warmup=False)
    >>> fig = performance_profile(df, measure="nit")
    >>> [ax.get_title() for ax in fig.axes][:1]                      # doctest: +ELLIPSIS
    ['...lcp...']
    """
    require("studies", "nsopt.studies.performance_profile()")
    _measure(measure)
    return draw_profile(profile_panels(results, measure, kinds, title), measure)


def profile_panels(results, measure: str = "time", kinds=None, title: str | None = None) -> list:
    """What :func:`performance_profile` draws, as plain data (no matplotlib): one panel per kind,
    ``(title, tau_max, [(label, xs, ys, colour, linestyle), ...])``, the step curves already closed
    at 0 and at ``tau_max``."""
    df = _prepare(results)
    kinds = sorted(k for k in df["kind"].unique() if k != "?") if kinds is None else list(kinds)
    panels = []
    for kind in kinds:
        table = measure_table(results, measure, kind)
        curves = profile_curves(table)
        finite = [t[-1] for t, _ in curves.values() if t.size]
        tau_max = max(1.0, max(finite) if finite else 1.0) * 1.05
        lines = []
        for lab, (tau, rho) in curves.items():
            xs = np.concatenate([[0.0], tau, [tau_max]])
            ys = np.concatenate([[0.0], rho, [rho[-1] if rho.size else 0.0]])
            # one colour per method family in every figure (METHOD_COLOURS); Siconos' NSN_AC dashed in nsn-ac's
            lines.append((lab, xs, ys, method_colour(lab), "--" if lab.startswith("Siconos ") else "-"))
        panels.append((f"{kind}: {table.shape[0]} problems" if title is None else title, tau_max, lines))
    return panels


def draw_profile(panels: list, measure: str = "time"):
    """The figure of :func:`profile_panels`' data (matplotlib only)."""
    ncols = min(len(panels), 3) or 1
    nrows = max(1, (len(panels) + ncols - 1) // ncols)
    fig = _grid_figure(nrows, ncols)
    for i, (name, tau_max, lines) in enumerate(panels):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        for lab, xs, ys, colour, ls in lines:
            ax.step(xs, ys, where="post", label=lab, color=colour, lw=1.8, ls=ls)
        ax.set_xlim(0, tau_max)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(f"log2 of the {MEASURES[measure][2]} ratio to the best")
        ax.set_ylabel("share of problems solved")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    return fig


PANEL = (6.4, 4.4)                               # inches per panel
MARGINS = MappingProxyType(dict(left=0.72, right=0.18, bottom=0.55, top=0.36, wspace=0.72, hspace=0.85))   # inches


def _grid_figure(nrows: int, ncols: int):
    """A figure of ``nrows x ncols`` panels of :data:`PANEL` inches with fixed margins in inches
    (room for the tick labels, axis labels and title of these plots): no layout engine, whose
    passes cost as much as drawing the figure once."""
    from matplotlib.figure import Figure

    w, h = PANEL[0] * ncols, PANEL[1] * nrows
    m = MARGINS
    fig = Figure(figsize=(w, h))
    fig.subplots_adjust(left=m["left"] / w, right=1 - m["right"] / w, bottom=m["bottom"] / h,
                        top=1 - m["top"] / h, wspace=m["wspace"] / (PANEL[0] - m["wspace"]),
                        hspace=m["hspace"] / (PANEL[1] - m["hspace"]))
    return fig


def warm_up_drawing() -> None:
    """Draw a tiny figure with text to PNG and SVG in memory: loads the fonts and fills
    matplotlib's text caches (~0.1-0.2 s on a first figure), e.g. in a thread while a campaign runs."""
    import io

    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    ax = fig.add_subplot()
    ax.step([0, 1], [0, 1], label="x")
    ax.set_xlabel("log2")
    ax.legend(fontsize=8)
    for fmt in ("png", "svg"):
        fig.savefig(io.BytesIO(), format=fmt, dpi=20)


# The colour of each method family, the same in every figure nsopt draws (time and iteration
# profiles, error histories, the tutorials): a Siconos solver takes the colour of the nsopt method of
# the same name. A family not listed gets a fixed colour from its name (the same in every plot).
METHOD_COLOURS = MappingProxyType({
    "nsgs": "#1f77b4", "nsn-ac": "#d62728", "nsn-fb": "#ff7f0e", "prox": "#9467bd",
    "socp-fp": "#2ca02c", "socp-tresca": "#17becf", "lemke": "#8c564b", "qp": "#e377c2",
    "pgs": "#7f7f7f", "psor": "#bcbd22", "enum": "#393b79", "newton-fb": "#ad494a",
    "linear": "#637939", "nsn": "#d62728", "lzb": "#1f77b4", "aclmfp": "#2ca02c",
})
_SPARE = ("#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363")


def method_colour(label: str) -> str:
    """The colour of a method (or a :func:`method_label`) in every nsopt figure."""
    import zlib

    family = _family(label)
    if family.startswith("auto:"):
        family = family[5:]
    return METHOD_COLOURS.get(family) or _SPARE[zlib.crc32(family.encode()) % len(_SPARE)]


def _family(label: str) -> str:
    base = label.split(" ", 1)[1] if label.startswith("Siconos ") else label
    return base.split(" ")[0].lower().replace("_", "-")


def _shgeom(x, shift=1.0):
    return float(np.exp(np.mean(np.log(np.asarray(x) + shift))) - shift)


def summary(results):
    """Per (kind, method): problems, solved, share solved, median time and iterations of the solved
    runs, shifted geometric mean of the time ratio to the best, and counts of the failed statuses.

    ``shgeom_time_ratio``: for each problem some method solved, the method's time divided by the
    best time on that problem (an unsolved problem counts as the timeout, or 10 times the largest
    time), averaged as a geometric mean shifted by 1 (qpbenchmark's shgeom): 1 is the best on
    every problem, 2 twice as slow on a typical one. ``timeout`` counts the runs stopped at the
    time limit: soft (status ``time_limit``, the method stopped with its best iterate) or hard
    (``timeout``, the worker killed).

    Parameters
    ----------
    results : pandas.DataFrame
        A results table (:func:`load_results`, :func:`nsopt.studies.compare`).

    Returns
    -------
    pandas.DataFrame
        One row per (kind, method): ``problems``, ``solved``, ``share_solved``, ``median_time``,
        ``median_nit``, ``shgeom_time_ratio``, ``timeout`` and the other failed statuses' counts.

    Examples
    --------
    >>> from nsopt.studies import summary
    >>> from nsopt.studies.records import to_frame
    >>> df = to_frame([dict(problem="a.dat", problem_hash="h1", kind="lcp", size=2, method=m,
    ...                         source="nsopt", tol=1e-8, status=s, time=t, error=e, nit=n)
    ...                    for m, s, t, e, n in [("lemke", "solved", 0.01, 1e-12, 3),
    ...                                          ("psor", "max_iter", 0.05, 1e-3, 100)]])
    >>> summary(df)[["method", "solved", "median_nit", "shgeom_time_ratio"]]
      method  solved  median_nit  shgeom_time_ratio
    0  lemke       1         3.0                1.0
    1   psor       0         NaN               10.0
    """
    require("studies", "nsopt.studies.summary()")
    import pandas as pd

    df = _prepare(results)
    rows = []
    for kind, d in df.groupby("kind"):
        T = measure_table(results, "time", kind)
        solved_any = np.isfinite(T.to_numpy()).any(axis=1)
        timeout = pd.to_numeric(d["timeout"], errors="coerce").max()
        finite = T.to_numpy()[np.isfinite(T.to_numpy())]
        penalty = timeout if np.isfinite(timeout) else 10.0 * (finite.max() if finite.size else 1.0)
        Ts = T[solved_any]
        best = Ts.min(axis=1)
        for lab, dl in d.groupby("label"):
            ok = dl[dl["status"] == "solved"]
            col = Ts[lab] if lab in Ts else pd.Series(np.inf, index=Ts.index)
            ratio = np.maximum(col.replace(np.inf, penalty), best) / best
            rows.append({
                "kind": kind, "method": lab, "source": dl["source"].iloc[0],
                "problems": int(T.shape[0]), "solved": int(ok["problem"].nunique()),
                "share_solved": ok["problem"].nunique() / T.shape[0] if T.shape[0] else 0.0,
                "median_time": float(ok["time"].astype(float).median()) if len(ok) else None,
                "median_nit": float(ok["nit"].astype(float).median()) if len(ok) else None,
                "shgeom_time_ratio": _shgeom(ratio) if len(ratio) else None,
                "timeout": int(dl["status"].isin(("timeout", "time_limit")).sum()),
                **{s: int((dl["status"] == s).sum()) for s in ("crashed", "error", "load_error")},
            })
    return pd.DataFrame(rows, columns=["kind", "method", "source", "problems", "solved", "share_solved",
                                       "median_time", "median_nit", "shgeom_time_ratio",
                                       "timeout", "crashed", "error", "load_error"])


def history_figure(histories: dict, problem: str, tol: float | None = None):
    """Error per iteration of each method on one problem (``histories``: label -> list of errors)."""
    fig = _grid_figure(1, 1)
    ax = fig.add_subplot()
    for lab, h in histories.items():
        h = np.asarray(h, dtype=float)
        if h.size:
            ax.semilogy(np.arange(h.size), np.maximum(h, 1e-300), label=lab, color=method_colour(lab),
                        ls="--" if lab.startswith("Siconos ") else "-")
    if tol:
        ax.axhline(tol, color="k", ls=":", lw=1, label=f"tol {tol:g}")
    ax.set_xlabel("iteration")
    ax.set_ylabel("error (Siconos measure)")
    ax.set_title(problem)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig
