"""Shared by the modeling examples: where figures go, and a non-interactive pyplot."""
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
