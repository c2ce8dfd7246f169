"""Shared by the examples: where figures go, a non-interactive pyplot, convergence plots."""
import os
from pathlib import Path


def figure_path(name):
    """``$NSOPT_FIGURES/name`` (default: examples/figures/name), the folder created."""
    d = Path(os.environ.get("NSOPT_FIGURES", Path(__file__).resolve().parent / "figures"))
    d.mkdir(parents=True, exist_ok=True)
    return d / name


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def convergence(ax_nit, ax_time, sol, label, **style):
    """Draw a solve's error against its iterations (``ax_nit``, None: not drawn) and against time
    (``ax_time``), from ``sol.history`` (``history=True``). The time of iteration k is taken as
    k * solve_time / nit: a method's iterations cost about the same, and a callback that stamped
    each one would slow the cheap ones (a Gauss-Seidel sweep) by more than it measures."""
    import numpy as np

    err = np.maximum(np.asarray(sol.history, dtype=float), 1e-17)
    k = np.arange(len(err))
    if ax_nit is not None:
        ax_nit.semilogy(k, err, label=label, **style)
    t = k * (sol.solve_time / max(sol.nit, 1))
    ax_time.loglog(t[1:], err[1:], label=label, **style)


def show_still(plt, path):
    """A still image of a scene (``Record.still``, written to ``path``) as a matplotlib figure of its
    own, so that the gallery shows it (and can take it as the example's thumbnail)."""
    fig, ax = plt.subplots(figsize=(6.4, 5.6), layout="constrained")
    ax.imshow(plt.imread(path))
    ax.set_axis_off()
    return fig


def convergence_axes(ax_nit, ax_time, tol, iteration="iteration"):
    """Label the two axes of :func:`convergence` (error against ``iteration`` and against time),
    with the target ``tol`` as a dashed line."""
    for ax in (ax_nit, ax_time):
        ax.axhline(tol, color="0.5", lw=0.8, ls="--")
        ax.set_ylabel("error (Siconos' measure)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    ax_nit.set_xlabel(iteration)
    ax_time.set_xlabel("time [s]")
