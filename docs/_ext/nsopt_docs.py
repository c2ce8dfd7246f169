"""The nsopt site's own Sphinx extension: what is generated at build time, never copied by hand.

* ``{nsopt-options}``: the glossary of option names (``nsopt.registry.OPTIONS``, one meaning each).
* ``{nsopt-methods}``: the table of methods, one row per registered (kind, method), with its summary,
  its own options and its place in the ``auto`` policy (``nsopt.registry``, ``nsopt.policy``).
* ``derivations/``: the notes of ``formulations/*.md`` rendered as executed MyST-NB pages, every
  display equation numbered and labelled ``<note>-<n>`` (or the name given by a ``<!-- label: name -->``
  line just before it), links ``[equation (name)](note.md...)`` turned into equation references,
  and a closing section that links the code building the program and prints its ``explain()``.
* ``api/``: one page per public package or module of nsopt, an autosummary of its public names
  (``__all__``, else the public names defined in it); an object re-exported in several places is
  documented once, at its first public spelling, and linked from the others.

Generated files live in ``docs/derivations/`` and ``docs/api/`` (git-ignored) and are rewritten
only when their text changes (so an incremental build stays incremental).
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


# ============================================================================ the methods table
def _table(header, rows, widths):
    table = nodes.table(classes=["nsopt-methods"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)

    def row(cells, head=False):
        r = nodes.row()
        for c in cells:
            entry = nodes.entry()
            if isinstance(c, nodes.Node):
                entry += c
            else:
                entry += nodes.paragraph(text=str(c))
            r += entry
        return r

    thead = nodes.thead()
    thead += row(header, True)
    group += thead
    body = nodes.tbody()
    for cells in rows:
        body += row(cells)
    group += body
    return table


def _literal_list(names):
    p = nodes.paragraph()
    for i, n in enumerate(names):
        if i:
            p += nodes.Text(", ")
        p += nodes.literal(text=n)
    return p


class MethodsTable(Directive):
    """``{nsopt-methods}`` [kind ...]: the registry's methods (all kinds when none is given)."""

    optional_arguments = 20
    option_spec = {"summary": directives.flag}

    def run(self):
        from nsopt import policy, registry, solvers  # noqa: F401  (solvers fills the registry)

        kinds = self.arguments or registry.kinds()
        rows = []
        for kind in kinds:
            order = policy.POLICY.auto(kind)
            for info in registry.for_kind(kind):
                place = f"{order.index(info.name) + 1}" if info.name in order else "–"
                opts = _literal_list(info.options) if info.options else "–"
                rows.append([nodes.literal(text=kind), nodes.literal(text=info.name), place,
                             info.summary, opts])
        return [_table(["kind", "method", "auto", "what it does", "its own options"], rows,
                       [8, 10, 5, 50, 27])]


class OptionsTable(Directive):
    """``{nsopt-options}``: the glossary of option names (``nsopt.registry.OPTIONS``), each with the
    methods that take it, then nsopt 0.1's names still accepted (``nsopt.registry.RENAMED``)."""

    option_spec = {"renamed": directives.flag}

    def run(self):
        from nsopt import registry, solvers  # noqa: F401  (solvers fills the registry)

        if "renamed" in self.options:
            rows = []
            for old, new in registry.RENAMED.items():
                takers = sorted({m.name for (_, _), m in registry._REGISTRY.items()
                                 if new in m.options and old not in m.options})
                rows.append([nodes.literal(text=old), nodes.literal(text=new), _literal_list(takers)])
            return [_table(["nsopt 0.1", "now", "the old name still accepted by"], rows, [20, 20, 60])]
        rows = []
        for name, meaning in registry.OPTIONS.items():
            takers = sorted({m.name for (_, _), m in registry._REGISTRY.items() if name in m.options})
            where = "every method (solve's own keyword)" if name in registry.COMMON + registry.ALIASES \
                else (_literal_list(takers) if takers else "–")
            rows.append([nodes.literal(text=name), meaning, where])
        return [_table(["option", "what it means (the one meaning in every method)", "taken by"], rows,
                       [15, 55, 30])]


class PolicyTable(Directive):
    """``{nsopt-policy}``: the methods of ``nsopt.policy.POLICY`` per kind: the order in which
    ``method="auto"`` tries them, and the first method and fallbacks of each step of a run."""

    def run(self):
        from nsopt import policy

        P = policy.POLICY
        rows = [[nodes.literal(text=k), " → ".join(P.auto(k)), " → ".join(P.run(k)) or "–"] for k in P.plans]
        return [_table(["kind", "auto tries, in order", "a run's step: first → fallbacks"], rows, [15, 50, 35])]


# ============================================================================ derivations
# For each note: the objects that build its program (documented in the API reference) and the
# code that prints the program of the note's worked example (run when the page is built).
NOTES = {
    "lcp": ("LCP as a convex QP", ["nsopt.formulations.LCPasQP", "nsopt.LCP"], '''\
import nsopt
from nsopt.formulations import LCPasQP

p = nsopt.LCP([[2.0, 1.0], [1.0, 2.0]], [-1.0, 1.0])      # the worked example
print(LCPasQP(p).explain())
sol = nsopt.solve(p, method="qp")
print("z =", sol.z.round(12), " w =", sol.w.round(12), " error", sol.error)'''),
    "mlcp": ("MLCP as a convex QP", ["nsopt.formulations.MLCPasQP", "nsopt.MLCP"], '''\
import nsopt
from nsopt.formulations import MLCPasQP

p = nsopt.MLCP.from_matrix([[2.0, 1.0], [1.0, 2.0]], [-2.0, -3.0], n=1)   # the worked example
print(MLCPasQP(p).explain())
sol = nsopt.solve(p, method="qp")
print("z =", sol.z.round(10), " w =", sol.w.round(10), " error", sol.error)'''),
    "relay": ("Relay as a box QP", ["nsopt.formulations.RelayAsQP", "nsopt.Relay"], '''\
import nsopt
from nsopt.formulations import RelayAsQP

p = nsopt.Relay([[2.0, 1.0], [1.0, 2.0]], [-3.0, 3.0], [-1.0, -1.0], [1.0, 1.0])   # the worked example
print(RelayAsQP(p).explain())
sol = nsopt.solve(p, method="qp")
print("z =", sol.z.round(10), " w =", sol.w.round(10), " error", sol.error)'''),
    "avi": ("AVI as a QP over a polyhedron", ["nsopt.formulations.AVIasQP", "nsopt.AVI"], '''\
import nsopt
from nsopt.formulations import AVIasQP

p = nsopt.AVI([[1.0, 0.0], [0.0, 1.0]], [-2.0, -1.0], [[-1.0, -1.0]], [-1.0])   # the worked example
print(AVIasQP(p).explain())
sol = nsopt.solve(p, method="qp")
print("z =", sol.z.round(10), " error", sol.error)'''),
    "fc2d": ("2D friction contact: SOCP + fixed point", ["nsopt.formulations.FCasSOCP",
                                                         "nsopt.FrictionContact"], '''\
import nsopt
from nsopt.formulations import FCasSOCP

p = nsopt.FrictionContact(2, [[1.0, 0.0], [0.0, 1.0]], [-1.0, 1.0], [0.5])   # the worked example
print(FCasSOCP(p).explain())
sol = nsopt.solve(p, method="socp-fp", tol=1e-10)
print("r =", sol.r.round(8), " u =", sol.u.round(8), " error", sol.error)'''),
    "fc3d": ("3D friction contact: SOCP + fixed point", ["nsopt.formulations.FCasSOCP",
                                                         "nsopt.formulations.FCTresca",
                                                         "nsopt.FrictionContact"], '''\
import numpy as np
import nsopt
from nsopt.formulations import FCasSOCP

p = nsopt.FrictionContact(3, np.eye(3), [-1.0, 1.0, 0.0], [0.5])   # the worked example
print(FCasSOCP(p).explain())
sol = nsopt.solve(p, method="socp-fp", tol=1e-10)
print("r =", sol.r.round(8), " u =", sol.u.round(8), " error", sol.error)'''),
    "gfc3d": ("Global friction contact: a primal SOCP", ["nsopt.formulations.GFCPrimalSOCP",
                                                         "nsopt.GlobalFrictionContact"], '''\
import numpy as np
import nsopt
from nsopt.formulations import GFCPrimalSOCP

p = nsopt.GlobalFrictionContact(np.eye(3), np.eye(3), np.zeros(3), [-1.0, 1.0, 0.0], [0.5])   # worked example
print(GFCPrimalSOCP(p).explain())
sol = nsopt.solve(p, method="socp-fp", tol=1e-10)
print("v =", sol.v.round(8), " r =", sol.r.round(8), " error", sol.error)'''),
    "gmp": ("The generic mechanical problem", ["nsopt.GenericMechanical", "nsopt.Block"], '''\
import numpy as np
import nsopt

# one equality row, one unilateral row, one 3D contact (mu = 0.3), coupled by a symmetric M
rng = np.random.default_rng(0)
B = rng.standard_normal((5, 5))
M = B @ B.T + 5 * np.eye(5)
q = np.array([1.0, -1.0, -1.0, 0.5, 0.2])
p = nsopt.GenericMechanical(M, q, [nsopt.Block("equality", 1), nsopt.Block("lcp", 1),
                                   nsopt.Block("fc3d", 3, mu=0.3)])
for method in nsopt.methods(p):
    if method != "auto":
        s = nsopt.solve(p, method=method, tol=1e-10)
        print(f"{method:5s} {s.status.value:8s} error {s.error:.1e} in {s.nit} iterations")'''),
    "multiple_impact": ("Multiple impacts (LZB)", ["nsopt.MultipleImpact"], '''\
import numpy as np
import nsopt

m = 0.0326   # two equal steel balls, Hertz contact, energetic restitution 0.8
p = nsopt.MultipleImpact(M=np.diag([m, m]), H=[[-1.0, 1.0]], v=[1.0, 0.0],
                         restitution=0.8, stiffness=1.05e10, elasticity=1.5)
s = nsopt.solve(p, method="lzb", impulse_step=1e-6)
print("post-impact velocities", s.v.round(6), " expected", [(1 - 0.8) / 2, (1 + 0.8) / 2])'''),
    "time_stepping": ("Time stepping: what each scheme assembles", ["nsopt.modeling.MoreauJeanOSI",
                                                                   "nsopt.modeling.EulerMoreauOSI",
                                                                   "nsopt.modeling.TimeStepping"], '''\
import numpy as np
from nsopt import modeling as nm

ball = nm.LagrangianLinearTIDS(q0=[1.0], v0=[0.0], M=[[1.0]], fext=[-9.81])
ground = nm.Interaction(nm.NewtonImpactNSL(e=0.9), nm.LagrangianLinearTIR(H=[[1.0]]))
nsds = nm.NonSmoothDynamicalSystem(t0=0.0, T=1.0)
nsds.link(ground, ball)
traj = nm.TimeStepping(nsds, h=0.01, integrator=nm.MoreauJeanOSI(theta=0.5), osns="lcp",
                       method="lemke", tol=1e-12).run()
k = int(np.argmax(traj.lambda_(ground, 1)[:, 0] > 0))
print(f"first impulse at t = {traj.t[k]:.2f} s: p = {traj.lambda_(ground, 1)[k, 0]:.4f} N s, "
      f"v- = {traj.v(ball)[k - 1, 0]:.4f}, v+ = {traj.v(ball)[k, 0]:.4f} m/s")'''),
}
ORDER = ["lcp", "mlcp", "relay", "avi", "fc2d", "fc3d", "gfc3d", "gmp", "multiple_impact", "time_stepping"]

_FRONT = """---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
html_theme.sidebar_secondary.remove: true
---
"""
_FRONT_TEXT = """---
html_theme.sidebar_secondary.remove: true
---
"""                                       # the derivations' wide equations get the page-toc column
_DISPLAY = re.compile(r"^(?P<indent>[ \t]*)\$\$(?P<body>.*?)\$\$[ \t]*$", re.S | re.M)
_LABEL = re.compile(r"^<!--\s*label:\s*(?P<name>[\w-]+)\s*-->\n", re.M)
_EQREF = re.compile(r"\[equation \((?P<name>[\w-]+)\)\]\([^)]*\)")
_NOTELINK = re.compile(r"(?<![\[/])`(?:formulations/)?(?P<stem>[a-z0-9_]+)\.md`")


def _labelled(stem: str, text: str) -> str:
    """Every ``$$ ... $$`` display equation gets a label (so MyST numbers it)."""
    out, pos, n = [], 0, 0
    for m in _DISPLAY.finditer(text):
        n += 1
        before = text[pos:m.start()]
        lab = _LABEL.search(before[-200:]) if before else None
        name = f"{stem}-{n}"
        if lab and before.endswith(lab.group(0)):
            name = lab.group("name")
            before = before[: len(before) - len(lab.group(0))]
        out.append(before)
        out.append(f"{m.group('indent')}$${m.group('body')}$$ ({name})")
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def derivation_page(stem: str, source: str) -> str:
    text = _labelled(stem, source)
    def eqref(m):       # equations are numbered per page: name the page of another note's equation
        name = m.group("name")
        other = name.split("-", 1)[0]
        where = f" of [{other}]({other}.md)" if other != stem and (ROOT / "formulations" / f"{other}.md").is_file() \
            else ""
        return f"equation {{eq}}`{name}`{where}"

    text = _EQREF.sub(eqref, text)
    text = _NOTELINK.sub(lambda m: f"[{m.group('stem')}.md]({m.group('stem')}.md)"
                         if (ROOT / "formulations" / f"{m.group('stem')}.md").is_file() else m.group(0), text)
    if stem not in NOTES:       # a note without its code cell yet: rendered as it is, numbered
        return _FRONT_TEXT + text.rstrip() + f"""

This page is the note `formulations/{stem}.md` of the repository.
"""
    title, objects, code = NOTES[stem]
    objs = ", ".join(f"{{py:obj}}`{o}`" for o in objects)
    tail = f"""

## In nsopt: the code and what it prints

The objects: {objs} (each API page links its source). This page is the note
`formulations/{stem}.md` of the repository; the cell below runs its example when the site is built.

```{{code-cell}} python
{code}
```
"""
    return _FRONT + text.rstrip() + "\n" + tail


def generate_derivations(app) -> None:
    out = DOCS / "derivations"
    notes = sorted(p.stem for p in (ROOT / "formulations").glob("*.md"))
    order = [s for s in ORDER if s in notes] + [s for s in notes if s not in ORDER]
    for stem in order:
        src = ROOT / "formulations" / f"{stem}.md"
        _write(out / f"{stem}.md", derivation_page(stem, src.read_text(encoding="utf-8")))
    for stale in out.glob("*.md"):
        if stale.stem != "index" and stale.stem not in order:
            stale.unlink()
    toc = "\n".join(order)
    _write(out / "index.md", f"""# Derivations

The notes of `formulations/`, one per formulation: the problem, the convex program, its KKT
conditions, why they are the problem (and when they are not), and a worked example. Equations are
numbered per page; each page ends with the code that builds the program, run when the site is built.

```{{toctree}}
:maxdepth: 1

{toc}
```
""")


# ============================================================================ API pages
# The public packages and modules, in reading order; each gets a page.
API_MODULES = [
    ("nsopt", "The top level: problems, solve, results, exceptions"),
    ("nsopt.problems", "Problem classes and their error measures"),
    ("nsopt.result", "Solution, Status, Iterate"),
    ("nsopt.exceptions", "Exceptions and warnings"),
    ("nsopt.io", "Files: Siconos .dat and FCLIB"),
    ("nsopt.formulations", "Convex views (CVXPY programs)"),
    ("nsopt.reductions", "Reductions between problems"),
    ("nsopt.generate", "Generated problems with known solutions"),
    ("nsopt.data", "The shared corpus"),
    ("nsopt.policy", "The auto policy"),
    ("nsopt.registry", "The registry of methods"),
    ("nsopt.modeling", "The modeling layer"),
    ("nsopt.symbolic", "The symbolic front end"),
    ("nsopt.studies", "Solver studies"),
]


def public_names(modname: str) -> list[str]:
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, v in vars(mod).items() if not n.startswith("_")
                 and getattr(v, "__module__", None) == modname
                 and (inspect.isclass(v) or inspect.isfunction(v))]
    return list(names)


def api_modules() -> list[tuple[str, str]]:
    """:data:`API_MODULES`, then every other public package of nsopt and every public top-level
    module with an ``__all__`` (a package added later is documented without editing this file)."""
    import pkgutil

    import nsopt

    listed = [m for m, _ in API_MODULES]
    more = []
    for info in pkgutil.iter_modules(nsopt.__path__, "nsopt."):
        name = info.name
        if name in listed or name.rsplit(".", 1)[1].startswith("_") or name in ("nsopt.cli",):
            continue
        try:
            mod = importlib.import_module(name)
        except ImportError:            # an optional dependency is missing (nsopt.jax without JAX)
            continue
        # vars(), not getattr(): nsopt's lazy __getattr__ would import what it names
        top = vars(nsopt).get(name.rsplit(".", 1)[1])
        if not info.ispkg and top is not None and not inspect.ismodule(top):
            continue                   # a module shadowed by a function of its name
        if not (info.ispkg or hasattr(mod, "__all__")) or not public_names(name):
            continue
        doc = (mod.__doc__ or name).strip().splitlines()[0]
        doc = re.split(r" \(|: ", doc)[0].replace("``", "").rstrip(".")
        more.append((name, doc))
    return list(API_MODULES) + more


def generate_api(app) -> None:
    out = DOCS / "api"
    seen: dict[int, str] = {}
    pages = []
    for modname, title in api_modules():
        mod = importlib.import_module(modname)
        own, linked, data = [], [], []
        for name in public_names(modname):
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                entry = getattr(obj, "__entry__", None)    # nsopt.solve: a module called as its function,
                if entry is not None:                      # documented on the module's page
                    linked.append(f"{obj.__name__}.{entry.__name__}")
                continue
            if not (inspect.isclass(obj) or callable(obj)):   # data (a constant, a table): in place
                data.append((name, obj))
                continue
            key = id(obj)
            if key in seen:
                linked.append(seen[key])
            else:
                seen[key] = f"{modname}.{name}"
                own.append(name)
        slug = modname
        pages.append(slug)
        head = f"{modname}: {title}"
        parent, _, leaf = modname.rpartition(".")
        shadowed = bool(parent) and not inspect.ismodule(vars(importlib.import_module(parent)).get(leaf, mod))
        lines = [f".. _api-{modname}:", "", head, "=" * len(head), "",
                 f".. automodule:: {modname}", "   :no-members:"]
        if shadowed:      # a module and, in its parent, a function of the same name
            lines += ["   :no-index:"]
        lines += ["", f".. currentmodule:: {modname}", ""]
        if own:
            lines += [".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
            lines += [f"   {n}" for n in own] + [""]
        if data:
            lines += ["Constants", "---------", ""]
            for name, obj in data:
                r = repr(obj)
                lines += [f".. py:data:: {name}", f"   :type: {type(obj).__name__}", ""]
                lines += [f"   ``{r}``" if len(r) <= 80 and "`" not in r else
                          f"   A {type(obj).__name__} of {len(obj)} entries (see the source)."
                          if hasattr(obj, "__len__") else "   (see the source)", ""]
        if linked:
            lines += ["Also here (documented where first exported):", "", ".. autosummary::",
                      "   :nosignatures:", ""]
            lines += [f"   ~{full.removeprefix(modname + '.')}" for full in linked] + [""]   # (relative
            # inside this module: autosummary refuses the current module's own name)
        _write(out / f"{slug}.rst", "\n".join(lines))
    documented = set(seen.values())
    for stub in (out / "generated").glob("*.rst"):      # stubs of names no longer public
        if stub.stem not in documented:
            stub.unlink()
    index = ["API reference", "=============", "",
             "Every public name of nsopt and its packages, generated from the docstrings at build time.",
             "An object exported in several places is documented once, where it is first exported",
             "(``nsopt.LCP``, not ``nsopt.problems.LCP``), and linked from the others.", "",
             ".. toctree::", "   :maxdepth: 1", ""] + [f"   {p}" for p in pages]
    _write(out / "index.rst", "\n".join(index) + "\n")


def draw_pictures(app) -> None:
    from nsopt_pictures import draw_all

    draw_all(DOCS)


_CDN_FONT_AWESOME = re.compile(r'<link[^>]*href="https://maxcdn\.bootstrapcdn\.com/font-awesome/[^"]*"[^>]*>\s*')


def offline_players(app, exc) -> None:
    """matplotlib's HTML animation players (``to_jshtml``, sphinx-gallery's animations) link Font
    Awesome 4 from a CDN for their button icons; the site works offline, and the theme's own
    Font Awesome (``_static/scripts/fontawesome.js``, loaded on every page) draws those icons."""
    if exc is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "maxcdn.bootstrapcdn.com/font-awesome" in text:
            page.write_text(_CDN_FONT_AWESOME.sub("", text), encoding="utf-8")


_BACKLINK = re.compile(r'(<a class="viewcode-back" href=")([^"#]+)#([^"]+)(")')
_ID = re.compile(r'\bid="([^"]+)"')


def viewcode_backlinks(app, exc) -> None:
    """Sphinx' viewcode gives all the objects of one source module the anchor prefix of the first
    name it saw documented from it (``nsopt.Status`` makes ``judged`` of the same module
    ``#nsopt.judged``, while it is documented as ``nsopt.result.judged``). Point each "[docs]" link
    of the source pages at the id its target page really has (the one ending with the same name)."""
    if exc is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    ids: dict[Path, set] = {}
    for page in (out / "_modules").rglob("*.html"):
        text = page.read_text(encoding="utf-8")

        def fix(m, page=page):
            target = (page.parent / m.group(2)).resolve()
            if target not in ids:
                ids[target] = set(_ID.findall(target.read_text(encoding="utf-8"))) if target.is_file() else set()
            anchor = m.group(3)
            if anchor in ids[target]:
                return m.group(0)
            name = anchor.split(".")[-1]
            same = sorted(i for i in ids[target] if i.endswith("." + name) or i == name)
            return m.group(1) + m.group(2) + "#" + (same[0] if same else anchor) + m.group(4)

        fixed = _BACKLINK.sub(fix, text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def setup(app):
    app.add_directive("nsopt-methods", MethodsTable)
    app.connect("build-finished", offline_players)
    app.connect("build-finished", viewcode_backlinks)
    app.add_directive("nsopt-policy", PolicyTable)
    app.add_directive("nsopt-options", OptionsTable)
    # at config-inited: before Sphinx lists the source files (autosummary and MyST-NB then see them)
    app.connect("config-inited", lambda app, config: (generate_derivations(app), generate_api(app),
                                                      draw_pictures(app)))
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
