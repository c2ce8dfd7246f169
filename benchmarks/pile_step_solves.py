"""The one-step problems of a pile's run, captured and replayed: CPU per solve, Newton iterations, and where a Newton
iteration's time goes (issue 32 §6).

    PYTHONPATH=<tree> python benchmarks/pile_step_solves.py capture SCENE OUT.pkl [--T 2.0]
    PYTHONPATH=<tree> python benchmarks/pile_step_solves.py replay OUT.pkl [--repeat 3] [--profile]

``capture`` runs ``SCENE`` of ``rigid_scenes.py`` with ``Scene.run``'s defaults (nsn-ac, tol 1e-6) and keeps each
fc3d one-step problem as the stepper hands it to ``solve`` (W, q, mu, the Delassus factors H and M^-1 when it has
them, the warm start). ``replay`` solves them in order as the stepper does (one Workspace for the run, the warm
start), ``--repeat`` times, and prints per tree: ms per solve (the best of the repeats), Newton iterations per solve,
ms per iteration, the largest error over tol (each solve judged by nsopt's measure, re-computed here), and with
``--profile`` the functions where the time goes. Run on two trees in turn (PYTHONPATH switched): the same problems.
"""
import argparse
import os
import pickle
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def capture(scene_name, out, T):
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import rigid_scenes
    from nsopt.modeling import simulation

    rec = []
    orig = simulation.TimeStepping._solve

    def spy(self, problem, warm):
        if getattr(problem, "kind", None) == "fc3d" or type(problem).__name__ == "FrictionContact":
            f = problem.delassus_factors
            rec.append(dict(W=problem.W.tocsr() if hasattr(problem.W, "tocsr") else np.asarray(problem.W),
                            q=np.array(problem.q), mu=np.array(problem.mu),
                            H=None if f is None else f.H.tocsc(), minv=None if f is None else np.array(f.minv),
                            warm=None if warm is None else np.array(warm)))
        return orig(self, problem, warm)

    simulation.TimeStepping._solve = spy
    sc = rigid_scenes.scene(scene_name)
    rigid_scenes.nsopt_scene(sc).run(T or sc["T"], sc["h"], theta=0.50001, method="nsn-ac", tol=1e-6,
                                     keep_states=False)
    with open(out, "wb") as fh:
        pickle.dump(rec, fh)
    print(f"{len(rec)} problems -> {out}")


def replay(path, repeat, profile):
    import numpy as np

    import nsopt
    with open(path, "rb") as fh:
        rec = pickle.load(fh)

    def problems():
        for d in rec:
            p = nsopt.FrictionContact(3, d["W"], d["q"], d["mu"])
            if d["H"] is not None:
                p = p.with_delassus_factors(d["H"], d["minv"], check=False)
            yield p, d["warm"]

    built = list(problems())
    nsopt.solve(built[0][0], method="nsn-ac", tol=1e-6)      # (numba's loading)
    best, nits, worst = None, None, 0.0
    for _ in range(repeat):
        ws = nsopt.Workspace()
        times, its = [], []
        for p, warm in problems():
            t = time.process_time()
            s = nsopt.solve(p, method="nsn-ac", tol=1e-6, warm_start=warm, workspace=ws)
            times.append(time.process_time() - t)
            its.append(s.nit)
            worst = max(worst, p.error(s.r) / 1e-6)
        best = np.array(times) if best is None else np.minimum(best, times)
        nits = np.array(its)
    print(f"{path}: {len(rec)} solves, {1e3 * best.mean():.3f} ms a solve (median {1e3 * np.median(best):.3f}), "
          f"{nits.mean():.2f} Newton iterations a solve (max {nits.max()}), "
          f"{1e3 * best.sum() / max(nits.sum(), 1):.3f} ms an iteration (setup included), "
          f"largest error / tol {worst:.3g}")
    if profile:
        import cProfile
        import pstats
        pr = cProfile.Profile()
        ws = nsopt.Workspace()
        pr.enable()
        for p, warm in problems():
            nsopt.solve(p, method="nsn-ac", tol=1e-6, warm_start=warm, workspace=ws)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("scene")
    c.add_argument("out")
    c.add_argument("--T", type=float, default=None)
    r = sub.add_parser("replay")
    r.add_argument("path")
    r.add_argument("--repeat", type=int, default=3)
    r.add_argument("--profile", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "capture":
        capture(a.scene, a.out, a.T)
    else:
        replay(a.path, a.repeat, a.profile)


if __name__ == "__main__":
    sys.exit(main())
