"""Pictures of the site drawn when it is built (matplotlib), written to ``docs/_generated/``."""

from __future__ import annotations

from pathlib import Path



def osns_picture(path: Path) -> None:
    """The one picture of "What is a one-step nonsmooth problem": a ball and the ground, the
    complementarity graph of gap and force, and Coulomb's cone of admissible reactions."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, FancyArrowPatch, Polygon, Rectangle

    fig = Figure(figsize=(10, 3.5), layout="constrained")
    ax = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.0, 1.0, 1.0]})
    blue, red, green, grey = "#1f4e79", "#c0392b", "#2e7d32", "0.45"

    # (a) the scene
    a = ax[0]
    a.add_patch(Rectangle((-1.6, -0.5), 3.2, 0.5, color="0.85", zorder=0))
    a.plot([-1.6, 1.6], [0, 0], color="0.3", lw=1.5)
    a.add_patch(Circle((0.0, 1.25), 0.5, color=blue, alpha=0.85))
    a.annotate("", xy=(0.95, 0.0), xytext=(0.95, 0.75), arrowprops=dict(arrowstyle="<->", color=grey, lw=1.2))
    a.text(1.03, 0.37, "gap g", color=grey, fontsize=11, va="center")
    a.add_patch(FancyArrowPatch((0.0, 0.75), (0.0, -0.05), arrowstyle="-|>", mutation_scale=14, color="0.1"))
    a.text(0.08, 0.5, "v", fontsize=12, style="italic")
    a.add_patch(FancyArrowPatch((-0.75, 0.0), (-0.75, 0.6), arrowstyle="-|>", mutation_scale=14, color=red,
                                lw=2))
    a.text(-1.45, 0.32, "force λ\n(only when\ng = 0)", color=red, fontsize=10, va="center")
    a.set_xlim(-1.6, 1.6)
    a.set_ylim(-0.5, 2.0)
    a.set_aspect("equal")
    a.axis("off")
    a.set_title("a ball and the ground", fontsize=12)

    # (b) the complementarity graph
    b = ax[1]
    b.plot([0, 0], [0, 1.0], color=red, lw=4, solid_capstyle="butt")
    b.plot([0, 1.0], [0, 0], color=blue, lw=4, solid_capstyle="butt")
    b.annotate("in contact:\ng = 0, λ ≥ 0", xy=(0.0, 0.7), xytext=(0.18, 0.72), fontsize=10, color=red,
               arrowprops=dict(arrowstyle="->", color=red))
    b.annotate("apart:\ng > 0, λ = 0", xy=(0.65, 0.0), xytext=(0.5, 0.25), fontsize=10, color=blue,
               arrowprops=dict(arrowstyle="->", color=blue))
    b.set_xlim(-0.15, 1.05)
    b.set_ylim(-0.15, 1.05)
    b.set_xlabel("gap g")
    b.set_ylabel("contact force λ")
    b.set_xticks([0])
    b.set_yticks([0])
    b.spines[["top", "right"]].set_visible(False)
    b.set_title(r"complementarity: $0 \leq g \perp \lambda \geq 0$", fontsize=12)

    # (c) Coulomb's cone (a section: normal up, one tangent direction)
    c = ax[2]
    mu = 0.5
    c.add_patch(Polygon([(0, 0), (-mu * 1.0, 1.0), (mu * 1.0, 1.0)], closed=True, color=green, alpha=0.18))
    c.plot([0, -mu], [0, 1.0], color=green, lw=2)
    c.plot([0, mu], [0, 1.0], color=green, lw=2)
    c.add_patch(FancyArrowPatch((0, 0), (-0.33, 0.68), arrowstyle="-|>", mutation_scale=14, color=red, lw=2))
    c.text(-0.5, 0.55, "reaction r", color=red, fontsize=10)
    c.add_patch(FancyArrowPatch((0.05, -0.05), (0.45, -0.05), arrowstyle="-|>", mutation_scale=14, color=blue,
                                lw=2))
    c.text(0.22, -0.13, "sliding velocity", color=blue, fontsize=10, ha="center", va="top")
    c.text(0.0, 1.05, r"$\|r_T\| \leq \mu\, r_N$", ha="center", fontsize=12, color=green)
    c.set_xlim(-0.8, 0.8)
    c.set_ylim(-0.3, 1.2)
    c.set_aspect("equal")
    c.set_xlabel("tangential component")
    c.set_ylabel("normal component")
    c.set_xticks([0])
    c.set_yticks([0])
    c.spines[["top", "right"]].set_visible(False)
    c.set_title("friction: the reaction stays in a cone", fontsize=12)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)


def draw_all(docs: Path) -> None:
    out = docs / "_generated"
    osns_picture(out / "osns.png")


if __name__ == "__main__":      # python docs/_ext/nsopt_pictures.py: draw them to look at
    draw_all(Path(__file__).resolve().parent.parent)
    print("drawn into docs/_generated/")
