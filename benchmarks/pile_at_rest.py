"""Why a pile is not at rest (issue 32 §3): run a pile of rigid_scenes.cubes(N) to T, saving every step's figures and,
from ``--detail`` seconds on, every state and every contact (body pair, id, gap, in the problem or not, force), then
analyse the record without running again.

    PYTHONPATH=<tree> python benchmarks/pile_at_rest.py run 1000 3.0 RECORD.pkl [--detail 1.5]
    python benchmarks/pile_at_rest.py analyse RECORD.pkl

``analyse`` prints the Newton iterations and CPU per step, the steps whose solve missed the tolerance, the kinetic
energy at 0.5 ... 3 s, over the detailed window the steps where the total energy (kinetic + potential) rose, and per
time the towers (the columns j mod k² of the lattice) still moving, with the horizontal velocity of the top of the
most energetic ones every 10 steps (a rocking tower: a triangle wave whose period shrinks with its amplitude).
"""
import os
import pickle
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rigid_scenes as rs  # noqa: E402

COLS = "k t ke nit err solved contacts active pen detect step solve cpu".split()


def record(n, T, out, detail):
    sc = rs.cubes(n)
    rows, states, contacts = [], {}, {}
    t0 = time.time()

    def save():
        with open(out, "wb") as fh:
            pickle.dump(dict(n=n, rows=np.array(rows), cols=COLS, states=states, contacts=contacts), fh)

    def hook(s):
        tm = s.times
        rows.append((s.k, s.t, s.kinetic_energy, s.nit, s.error, 0 if s.status is None else s.status.value == "solved",
                     s.contacts, s.active, s.penetration, tm["detect"], tm["step"], tm["solve"], tm["cpu"]))
        if s.t >= detail - 1e-9 or s.k % 20 == 0:
            states[s.k] = (s.q.copy(), s.v.copy())
        if s.t >= detail - 1e-9 and s.detected is not None:
            c = s.detected
            contacts[s.k] = dict(body1=c.body1.copy(), body2=c.body2.copy(), static2=c.static2.copy(), id=c.id.copy(),
                                 distance=c.distance.copy(), active=s.active_mask.copy(), forces=s.forces.copy())
        if s.k % 20 == 0:
            print(f"step {s.k} t {s.t:.3f} KE {s.kinetic_energy:.3e} nit {s.nit} contacts {s.contacts} "
                  f"wall {time.time() - t0:.0f} s", flush=True)
        if s.k % 100 == 0:
            save()

    rs.nsopt_scene(sc).run(T, sc["h"], method="nsn-ac", tol=1e-6, keep_states=False, on_step=hook)
    save()


def analyse(path):
    with open(path, "rb") as fh:
        d = pickle.load(fh)
    R, S = d["rows"], d["states"]
    c = {k: i for i, k in enumerate(d["cols"])}
    n = d.get("n", S[min(S)][0].shape[0])
    k2 = round(n ** (2 / 3)) if n > 100 else n
    inertia = 0.2 ** 2 / 6
    t = R[:, c["t"]]
    print(f"{len(t)} steps: {R[:, c['nit']].mean():.2f} Newton iterations a step, CPU {1e3 * R[:, c['cpu']].mean():.0f} ms"
          f" a step; steps whose solve missed the tolerance: "
          f"{int(((R[:, c['solved']] == 0) & (R[:, c['active']] > 0)).sum())}")
    for s in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0):
        j = np.searchsorted(t, s - 1e-9)
        if j < len(t):
            print(f"  t {t[j]:.2f} s: KE {R[j, c['ke']]:.3e} J")
    ks = [k for k in sorted(S) if k >= 1 and t[k - 1] >= t[-1] - 1.5 - 1e-9]

    def ke(v):
        return 0.5 * (v[:, :3] ** 2).sum(1) + 0.5 * inertia * (v[:, 3:] ** 2).sum(1)

    E = np.array([ke(S[k][1]).sum() + rs.GRAVITY * S[k][0][:, 2].sum() for k in ks])
    dE = np.diff(E)
    print(f"window {t[ks[0] - 1]:.2f}-{t[ks[-1] - 1]:.2f} s: the total energy rose in {(dE > 0).sum()} of {dE.size} steps"
          f" (largest rise {dE.max():.2e} J)")
    towers = [np.arange(col, n, k2) for col in range(k2)]
    for k in ks[::100] + [ks[-1]]:
        q, v = S[k]
        top = np.array([np.linalg.norm(v[js, :3], axis=1).max() for js in towers])
        e = np.array([ke(v[js]).sum() for js in towers])
        print(f"  t {t[k - 1]:.2f} s: towers faster than 1 cm/s {(top > 1e-2).sum()}, 1 mm/s {(top > 1e-3).sum()};"
              f" the 5 most energetic carry {100 * np.sort(e)[-5:].sum() / max(e.sum(), 1e-300):.0f} %")
    v = S[ks[-1]][1]
    e = np.array([ke(v[js]).sum() for js in towers])
    for col in np.argsort(e)[::-1][:3]:
        js = towers[col]
        vx = np.array([S[k][1][js[-1], :2] for k in ks])
        axis = int(np.argmax(np.abs(vx).max(0)))
        print(f"  tower {col}: its top's horizontal velocity every 10 steps (m/s):", np.round(vx[::10, axis], 3))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        detail = float(sys.argv[sys.argv.index("--detail") + 1]) if "--detail" in sys.argv else 1.5
        record(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], detail)
    else:
        analyse(sys.argv[2])
