r"""Spheres in a box with Coulomb friction
======================================

Spheres in a 3D box with Coulomb friction: one FrictionContact (3D) problem per step.

Each sphere is a LagrangianLinearTIDS with q = (position, rotation vector), M = diag(m, m, m, I, I, I).
A wall contact is a LagrangianLinearTIR (constant normal n and tangents t1, t2): y = (n·x - d - R, ., .),
with rows [n, 0] and [t, -R (n × t)]. A sphere–sphere contact is a LagrangianScleronomousR with
h = (:math:`|x_1 - x_2| - 2R`, 0, 0) and G0 rows [n, 0, -n, 0], [t, -R(n × t), -t, -R(n × t)] (n from sphere 2
to sphere 1). Its plug-ins are vectorized (``LagrangianScleronomousR(h, G0, vectorized=True)``: they
take the stacked q (k, 12) of all pairs and return (k, 3) and (k, 3, 12)), so that Moreau–Jean
evaluates every pair in one call per step (the batched path, ``formulations/time_stepping.md``).
Pairs (and walls) within a margin are linked every few steps (contact detection by a k-d tree), so
only near contacts are interactions. Laws: NewtonImpactFrictionNSL(en, 0, mu, 3).

The assembled problems are written to FCLIB, one file per step (``sim.write_problems_to(DIR)``, which
writes with ``nsopt.io.write_fclib``), and read back by ``nsopt.io.load``:
``python examples/modeling_spheres_box.py --fclib DIR`` writes ``DIR/step_000001.hdf5``, ... (a corpus
for ``nsopt compare DIR``). Writes ``modeling_spheres_box.png``.
"""
import math

import numpy as np
from numba import njit
from scipy.spatial import cKDTree

from _plotting import figure_path, pyplot
from nsopt import modeling as nm

R, MASS, G = 0.05, 1.0, 9.81
INERTIA = 0.4 * MASS * R * R


def cross(a, b):
    """a × b for 3-vectors (np.cross is slow on tiny arrays)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def frame(n):
    """Two unit tangents completing n to an orthonormal frame."""
    a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = cross(n, a)
    t1 /= math.sqrt(t1 @ t1)
    return t1, cross(n, t1)


def wall_relation(n, d):
    """Contact of a sphere with the plane {x : n·x = d} (n pointing inside the box)."""
    n = np.asarray(n, dtype=float)
    t1, t2 = frame(n)
    H = np.zeros((3, 6))
    H[0, :3] = n
    for i, t in ((1, t1), (2, t2)):
        H[i, :3] = t
        H[i, 3:] = -R * cross(n, t)
    return nm.LagrangianLinearTIR(H, b=[-d - R, 0.0, 0.0])


@njit(cache=True)
def _pair_h(q, z):  # pragma: no cover  (compiled)
    """Gap of sphere pairs, vectorized: q (k, 12) stacked (x1, r1, x2, r2) -> (k, 3)."""
    out = np.zeros((q.shape[0], 3))
    for i in range(q.shape[0]):
        d0, d1, d2 = q[i, 0] - q[i, 6], q[i, 1] - q[i, 7], q[i, 2] - q[i, 8]
        out[i, 0] = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - 2 * R
    return out


@njit(cache=True)
def _pair_G0(q, z):  # pragma: no cover  (compiled)
    """Jacobian of the pair gap and tangential velocities, vectorized: (k, 12) -> (k, 3, 12), rows
    [n, 0, -n, 0], [t1, -R(n × t1), -t1, -R(n × t1)], [t2, -R(n × t2), ...] with t1 ∝ n × e_x (or
    n × e_y when n is close to e_x) and t2 = n × t1, so -R(n × t1) = -R t2 and -R(n × t2) = R t1.
    Compiled with numba: a plug-in is user code, and a loop over the pairs is its fastest form."""
    k = q.shape[0]
    G = np.zeros((k, 3, 12))
    for i in range(k):
        d0, d1, d2 = q[i, 0] - q[i, 6], q[i, 1] - q[i, 7], q[i, 2] - q[i, 8]
        s = 1.0 / math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        nx, ny, nz = d0 * s, d1 * s, d2 * s
        if abs(nx) < 0.9:
            a1, a2, a3 = 0.0, nz, -ny
        else:
            a1, a2, a3 = -nz, 0.0, nx
        s = 1.0 / math.sqrt(a1 * a1 + a2 * a2 + a3 * a3)
        a1, a2, a3 = a1 * s, a2 * s, a3 * s
        b1, b2, b3 = ny * a3 - nz * a2, nz * a1 - nx * a3, nx * a2 - ny * a1
        for j, (x, y, w) in enumerate(((nx, ny, nz), (a1, a2, a3), (b1, b2, b3))):
            G[i, j, 0], G[i, j, 1], G[i, j, 2] = x, y, w
            G[i, j, 6], G[i, j, 7], G[i, j, 8] = -x, -y, -w
        G[i, 1, 3], G[i, 1, 4], G[i, 1, 5] = -R * b1, -R * b2, -R * b3
        G[i, 1, 9], G[i, 1, 10], G[i, 1, 11] = -R * b1, -R * b2, -R * b3
        G[i, 2, 3], G[i, 2, 4], G[i, 2, 5] = R * a1, R * a2, R * a3
        G[i, 2, 9], G[i, 2, 10], G[i, 2, 11] = R * a1, R * a2, R * a3
    return G


def pair_relation(vectorized=True):
    """Contact of two spheres: h, G0 above, evaluated for every pair at once (``vectorized=True``), or
    pair by pair (``vectorized=False``: the same plug-ins called on one row)."""
    if vectorized:
        return nm.LagrangianScleronomousR(_pair_h, _pair_G0, vectorized=True)
    return nm.LagrangianScleronomousR(lambda q, z: _pair_h(q[None, :], z)[0],
                                      lambda q, z: _pair_G0(q[None, :], z)[0])


class Box:
    """The spheres, the walls and the contact detection (a callable run before the steps)."""

    def __init__(self, n_spheres=10, mu=0.3, en=0.0, size=None, seed=0, T=1.0, margin=None, gap=0.2,
                 vectorized=True):
        self.vectorized = vectorized
        rng = np.random.default_rng(seed)
        spacing = (2 + gap) * R                                 # gap = 0: a packed lattice, resting
        side = int(np.ceil(np.sqrt(max(1, n_spheres / 4))))   # about 4 layers
        self.L = size or max(4 * R, side * spacing + 0.2 * R)
        self.mu, self.en = mu, en
        self.margin = margin or 0.5 * R
        self.spheres = []
        per_row = max(1, int((self.L - 0.1 * R) // spacing))
        per_layer = per_row ** 2
        k = 0
        while len(self.spheres) < n_spheres:
            layer, pos = divmod(k, per_layer)
            row, col = divmod(pos, per_row)
            x = np.array([R + col * spacing, R + row * spacing, (1 + gap / 2) * R + layer * spacing])
            v = np.zeros(6)
            if gap > 0:
                x[:2] += rng.uniform(-0.05, 0.05, 2) * R
                v[:3] = rng.normal(0.0, 0.1, 3)
            self.spheres.append(nm.LagrangianLinearTIDS(np.concatenate([x, np.zeros(3)]), v,
                                                        np.diag([MASS] * 3 + [INERTIA] * 3),
                                                        fext=[0.0, 0.0, -MASS * G, 0.0, 0.0, 0.0]))
            k += 1
        self.walls = [((0, 0, 1), 0.0), ((1, 0, 0), 0.0), ((-1, 0, 0), -self.L), ((0, 1, 0), 0.0), ((0, -1, 0), -self.L)]
        self.nsds = nm.NonSmoothDynamicalSystem(0.0, T)
        for s in self.spheres:
            self.nsds.insert_dynamical_system(s)
        self.links = {}
        self.detect()

    def law(self):
        return nm.NewtonImpactFrictionNSL(self.en, 0.0, self.mu, 3)

    def centres(self, sim=None):
        """The spheres' centres: in the run ``sim`` (``sim.state_of``), else their own (initial) positions."""
        return np.array([(s.q if sim is None else sim.state_of(s, "q"))[:3] for s in self.spheres])

    def detect(self, sim=None):
        """Link the walls and pairs within the margin, unlink the far ones."""
        X = self.centres(sim)
        want = set()
        for i, x in enumerate(X):
            for w, (n, d) in enumerate(self.walls):
                if np.dot(n, x) - d - R < self.margin:
                    want.add(("w", i, w))
        for i, j in cKDTree(X).query_pairs(2 * R + self.margin):
            want.add(("p", i, j))
        for key in [k for k in self.links if k not in want]:
            self.nsds.remove_interaction(self.links.pop(key))
        for key in sorted(want - set(self.links)):
            if key[0] == "w":
                n, d = self.walls[key[2]]
                inter = nm.Interaction(self.law(), wall_relation(n, d))
                self.nsds.link(inter, self.spheres[key[1]])
            else:
                inter = nm.Interaction(self.law(), pair_relation(self.vectorized))
                self.nsds.link(inter, self.spheres[key[1]], self.spheres[key[2]])
            self.links[key] = inter

    def gaps(self, sim=None):
        X = self.centres(sim)
        g = [X[:, 2] - R, X[:, 0] - R, self.L - X[:, 0] - R, X[:, 1] - R, self.L - X[:, 1] - R]
        if len(X) > 1:
            for i, j in cKDTree(X).query_pairs(2 * R):
                g.append(np.array([np.linalg.norm(X[i] - X[j]) - 2 * R]))
        return np.concatenate(g)


def simulate(n_spheres=10, h=2e-3, T=0.5, detect_every=5, write_problems=None, method="auto", tol=1e-8):
    """Run the box; ``write_problems``: a folder (created if missing) receiving each step's problem as
    ``step_<k>.hdf5`` (FCLIB, ``TimeStepping.write_problems_to``); an existing file of this run's steps
    there is an ``OutputError``, not replaced."""
    box = Box(n_spheres, T=T)
    sim = nm.TimeStepping(box.nsds, h, nm.MoreauJeanOSI(0.5), osns="fc3d", method=method, tol=tol)
    if write_problems is not None:
        sim.write_problems_to(write_problems)
    t, zc, min_gap, kinetic, cone, statuses = [0.0], [], [], [], [], []
    positions = [np.array([s.q[:3] for s in box.spheres])]
    sols = []
    while sim.has_next_step():
        if sim.k % detect_every == 0 and sim.k > 0:
            box.detect(sim)
        sol = sim.step()
        statuses.append(None if sol is None else sol.status)
        if sol is not None:
            r = sol.r.reshape(-1, 3)
            mu = sol.problem.mu
            cone.append(float(np.max(np.linalg.norm(r[:, 1:], axis=1) - mu * r[:, 0] - 1e-6 * (1 + np.abs(r[:, 0])))))
            sols.append((sim.k, sol.problem, sol.r))
        X = box.centres(sim)
        positions.append(X)
        zc.append(X[:, 2].mean())
        min_gap.append(box.gaps(sim).min())
        V = [sim.state_of(s, "v") for s in box.spheres]
        kinetic.append(sum(0.5 * MASS * v[:3] @ v[:3] + 0.5 * INERTIA * v[3:] @ v[3:] for v in V))
        t.append(sim.t)
    sim.write_problems_to(None)
    return {"t": np.array(t[1:]), "z_mean": np.array(zc), "min_gap": np.array(min_gap), "kinetic": np.array(kinetic),
            "cone_violation": np.array(cone), "status": statuses, "solutions": sols, "box": box, "sim": sim,
            "positions": np.array(positions)}


def draw_box(ax, L, H):
    """The outline of the box [0, L] x [0, L] x [0, H] (open at the top: dotted)."""
    for x0, y0 in ((0, 0), (L, 0), (L, L), (0, L)):
        ax.plot([x0, x0], [y0, y0], [0, H], color="0.35", lw=1)
    for z, ls in ((0.0, "-"), (H, ":")):
        ax.plot([0, L, L, 0, 0], [0, 0, L, L, 0], [z] * 5, color="0.35", lw=1, ls=ls)


def draw_spheres(ax, X, colours):
    """Spheres of radius R at the centres X, drawn to scale (surfaces, not markers)."""
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 16), np.linspace(0, np.pi, 9))
    unit = np.array([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)])
    return [ax.plot_surface(*(x[:, None, None] + R * unit), color=c, linewidth=0, shade=True)
            for x, c in zip(X, colours)]


def scene_axes(ax, L, H):
    ax.set_xlim(0, L); ax.set_ylim(0, L); ax.set_zlim(0, H)
    ax.set_box_aspect((L, L, H))                          # equal scales: spheres look round
    ax.set_xlabel("x [m]"); ax.set_ylabel("y [m]"); ax.set_zlabel("z [m]")
    from matplotlib.ticker import MaxNLocator

    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(MaxNLocator(4))
    ax.tick_params(labelsize=8)


def main(argv=None):
    import argparse
    import os

    from matplotlib import animation

    ap = argparse.ArgumentParser(description=(globals().get("__doc__") or "").split("\n")[0])
    ap.add_argument("--fclib", metavar="DIR", help="write each step's FrictionContact problem to DIR/step_<k>.hdf5")
    args = ap.parse_args(argv)
    plt = pyplot()
    quick = os.environ.get("NSOPT_QUICK", "0") == "1"     # the site's reduced case: a shorter fall
    r = simulate(10, T=0.3 if quick else 0.5, write_problems=args.fclib)
    if args.fclib:
        print(f"{len(r['solutions'])} FCLIB files in {args.fclib}")
    L = r["box"].L
    P = r["positions"]
    H = max(L, float(P[..., 2].max()) + R)
    colours = [plt.cm.viridis(k / max(1, len(P[0]) - 1)) for k in range(len(P[0]))]
    fig = plt.figure(figsize=(11, 4.6), layout="constrained")
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    draw_box(ax, L, H)
    draw_spheres(ax, P[-1], colours)
    scene_axes(ax, L, H)
    ax.set_title(f"{len(P[0])} spheres (radius {R} m) at t = {r['t'][-1]:.2f} s")
    ax2 = fig.add_subplot(1, 2, 2)
    ax2.plot(r["t"], r["kinetic"], color="C0")
    ax2.set_xlabel("time t [s]"); ax2.set_ylabel("kinetic energy [J]")
    ax2.set_title("kinetic energy: gained in the fall, lost in impacts and friction"); ax2.grid(alpha=0.3)
    out = figure_path("modeling_spheres_box.png")
    fig.savefig(out, dpi=100)
    print(f"{len(r['box'].spheres)} spheres, min gap {r['min_gap'].min():.2e} m, "
          f"max cone violation {r['cone_violation'].max():.1e}, figure: {out}")

    # the fall, as an animation (every few steps; the site shows it as an HTML player)
    afig = plt.figure(figsize=(5, 4.6), layout="constrained")
    aax = afig.add_subplot(projection="3d")
    frames = list(range(0, len(P), max(1, len(P) // 40))) + [len(P) - 1]

    def frame(k):
        aax.cla()
        draw_box(aax, L, H)
        draw_spheres(aax, P[k], colours)
        scene_axes(aax, L, H)
        aax.set_title(f"t = {k * (r['t'][1] - r['t'][0]):.3f} s")

    return animation.FuncAnimation(afig, frame, frames=frames, interval=80)


if __name__ == "__main__":
    # sphinx_gallery_multi_image = "single"
    anim = main()
