"""Viewers for recorded rigid-body motions: a self-contained HTML page (three.js r160 embedded, works offline)
with the bodies, a time slider and a play button; still images with matplotlib for documents.

Both draw the same triangle meshes, made once per shape by :func:`shape_mesh` (trimesh's primitives).
The page keeps the poses as float32 (base64), at most ``max_frames`` frames of the recording.

>>> # write_html("run.html", bodies, poses, times, statics=[(contactors, pose)])   # then open it in a browser
"""

from __future__ import annotations

import base64
import errno
import html
import json
import numbers
import os
import re
from pathlib import Path

import numpy as np

from ..exceptions import ModelingError, OutputError
from ..io._target import check_file, temporary_beside
from ..modeling import _rotation as rot
from .shapes import _Z_TO_Y, Box, Capsule, Cone, Contactor, ConvexMesh, Cylinder, HalfSpace, Shape, Sphere

__all__ = ["shape_mesh", "html_page", "write_html", "still"]

_VENDOR = Path(__file__).with_name("_vendor") / "three.module.min.js"
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")


def shape_mesh(shape: Shape, extent: float = 10.0):
    """Triangles of a shape in its own frame: (vertices (n, 3), faces (m, 3)). A half-space is drawn as a square
    of side ``extent`` on its boundary plane."""
    import trimesh
    if isinstance(shape, Box):
        m = trimesh.creation.box(extents=shape.extents)
    elif isinstance(shape, Sphere):
        m = trimesh.creation.icosphere(subdivisions=2, radius=shape.radius)
    elif isinstance(shape, Capsule):
        m = trimesh.creation.capsule(height=shape.length, radius=shape.radius, count=[24, 12])
    elif isinstance(shape, Cylinder):
        m = trimesh.creation.cylinder(radius=shape.radius, height=shape.length, sections=24)
    elif isinstance(shape, Cone):
        m = trimesh.creation.cone(radius=shape.radius, height=shape.height, sections=24)
        m.apply_translation([0.0, 0.0, -shape.height / 2])
    elif isinstance(shape, ConvexMesh):
        m = trimesh.convex.convex_hull(shape.vertices)
    elif isinstance(shape, HalfSpace):
        n = shape.normal
        t1, t2 = rot.ortho_base(n)
        c = shape.offset * n
        h = extent / 2
        V = np.array([c + h * (a * t1 + b * t2) for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))])
        return V, np.array([[0, 1, 2], [0, 2, 3]])
    else:
        raise ModelingError("viewer", "shape", f"cannot draw a {type(shape).__name__}")
    V = np.asarray(m.vertices, dtype=float)
    if isinstance(shape, (Capsule, Cylinder, Cone)):
        V = V @ _Z_TO_Y.T                                  # trimesh's axis z to the shape's y
    return V, np.asarray(m.faces, dtype=np.int64)


def _contactors(c):
    return [c] if isinstance(c, Contactor) else list(c)


def _scene_data(bodies, statics, extent):
    """The shape table, each body's and static object's list of (shape index, offset pose, colour)."""
    shapes, keys, out_b, out_s = [], {}, [], []

    def index(shape):
        key = id(shape)
        if key not in keys:
            V, F = shape_mesh(shape, extent)
            keys[key] = len(shapes)
            shapes.append({"v": np.round(V, 6).ravel().tolist(), "f": F.ravel().tolist()})
        return keys[key]

    for b, cs in enumerate(bodies):
        out_b.append([{"shape": index(c.shape), "offset": np.r_[c.translation, c.orientation].tolist(),
                       "color": PALETTE[b % len(PALETTE)]} for c in _contactors(cs)])
    for cs, pose in statics:
        out_s.append({"pose": np.asarray(pose, dtype=float).tolist(),
                      "parts": [{"shape": index(c.shape), "offset": np.r_[c.translation, c.orientation].tolist(),
                                 "color": "#bbbbbb"} for c in _contactors(cs)]})
    return shapes, out_b, out_s


def _numbers(a, field):
    """``a`` as a float array, a :class:`ModelingError` naming ``field`` for strings, complex numbers or ragged input."""
    if np.iscomplexobj(a):
        raise ModelingError("viewer", field, "has complex entries")
    try:
        return np.asarray(a, dtype=float)
    except (TypeError, ValueError) as e:
        raise ModelingError("viewer", field, f"is not numeric ({e})") from None


def _check_poses(poses, field):
    """Non-finite poses and zero quaternions, refused (a page of them would show nothing: JSON has no NaN)."""
    bad = ~np.isfinite(poses).all(axis=-1)
    if bad.any():
        raise ModelingError("viewer", field, f"has non-finite entries (nan or inf) at {_where(bad)}")
    zero = ~(np.linalg.norm(poses[..., 3:7], axis=-1) > 0)
    if zero.any():
        raise ModelingError("viewer", field, f"the quaternion is zero at {_where(zero)}")


def _where(mask) -> str:
    if not np.ndim(mask):
        return "its entries"
    first = tuple(int(i) for i in np.argwhere(mask)[0])
    return f"index {first if len(first) > 1 else first[0]} ({int(mask.sum())} pose(s))"


def _check(bodies, poses, times):
    """The bodies (a non-empty list of contactor lists), poses (steps, n, 7) and times (steps,), checked."""
    bodies = list(bodies) if isinstance(bodies, (list, tuple)) else None
    if not bodies:
        raise ModelingError("viewer", "bodies", "is empty: there is no dynamic body to show (a page or an image of "
                                                "nothing moving)")
    for b, cs in enumerate(bodies):
        cs = _contactors(cs) if isinstance(cs, (Contactor, list, tuple)) else None
        if not cs or not all(isinstance(c, Contactor) for c in cs):
            raise ModelingError("viewer", f"bodies[{b}]", "must be a Contactor or a non-empty list of Contactor")
    poses = _numbers(poses, "poses")
    if poses.ndim == 2:
        poses = poses[None]
    if poses.ndim != 3 or poses.shape[1:] != (len(bodies), 7) or not poses.shape[0]:
        raise ModelingError("viewer", "poses", f"has shape {poses.shape}, expected (steps >= 1, {len(bodies)}, 7)")
    _check_poses(poses, "poses")
    times = np.arange(poses.shape[0], dtype=float) if times is None else _numbers(times, "times").reshape(-1)
    if times.shape[0] != poses.shape[0]:
        raise ModelingError("viewer", "times", f"has {times.shape[0]} entries for {poses.shape[0]} frames")
    if not np.isfinite(times).all():
        raise ModelingError("viewer", "times", "has non-finite entries (nan or inf)")
    return bodies, poses, times


def _check_statics(statics):
    """The static objects: (contactor(s), pose (7,)) pairs, each pose finite with a nonzero quaternion."""
    out = []
    for k, item in enumerate(statics):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ModelingError("viewer", f"statics[{k}]", "must be a (contactors, pose) pair")
        cs, pose = item
        cs = _contactors(cs) if isinstance(cs, (Contactor, list, tuple)) else None
        if not cs or not all(isinstance(c, Contactor) for c in cs):
            raise ModelingError("viewer", f"statics[{k}]", "its contactors must be a Contactor or a non-empty list of them")
        pose = _numbers(pose, f"statics[{k}].pose").reshape(-1)
        if pose.shape != (7,):
            raise ModelingError("viewer", f"statics[{k}].pose", f"has {pose.shape[0]} entries, expected 7")
        _check_poses(pose, f"statics[{k}].pose")
        out.append((cs, pose))
    return out


def _check_max_frames(max_frames) -> int:
    if isinstance(max_frames, (bool, np.bool_)) or not isinstance(max_frames, numbers.Integral) or max_frames < 1:
        raise ModelingError("viewer", "max_frames", f"must be an integer >= 1, got {max_frames!r}")
    return int(max_frames)


def _extent(poses, statics):
    pts = poses[..., :3].reshape(-1, 3)
    fin = [np.asarray(p, dtype=float)[:3] for _, p in statics]
    allp = np.vstack([pts] + ([np.array(fin)] if fin else []))
    return float(max(4.0, 2.5 * np.ptp(allp, axis=0).max() + 4.0))


def html_page(bodies, poses, times=None, statics=(), *, title: str = "nsopt", max_frames: int = 400) -> str:
    """The page's HTML text. ``bodies``: for each dynamic body its contactor(s); ``poses`` (steps, n, 7);
    ``times`` (steps,); ``statics``: (contactor(s), pose) pairs."""
    bodies, poses, times = _check(bodies, poses, times)
    statics = _check_statics(statics)
    max_frames = _check_max_frames(max_frames)
    if not isinstance(title, str):
        raise ModelingError("viewer", "title", f"must be a str, got {type(title).__name__}")
    if poses.shape[0] > max_frames:
        keep = np.unique(np.linspace(0, poses.shape[0] - 1, max_frames).round().astype(int))
        poses, times = poses[keep], times[keep]
    big = float(np.abs(poses[..., :3]).max())
    if not big < 1e30:                                      # the page keeps float32 poses; the camera spans them
        raise ModelingError("viewer", "poses", f"has a position of magnitude {big:.3g}, too far to draw (the page keeps "
                                               "float32 poses, up to 1e30)")
    extent = _extent(poses, statics)
    if not np.isfinite(extent):
        raise ModelingError("viewer", "statics", "the static objects are too far from the bodies to draw")
    shapes, bdata, sdata = _scene_data(bodies, statics, extent)
    data = {"title": title, "shapes": shapes, "bodies": bdata, "statics": sdata, "times": times.tolist(),
            "frames": int(poses.shape[0]), "n": len(bodies), "extent": extent,
            "poses": base64.b64encode(np.ascontiguousarray(poses, dtype="<f4").tobytes()).decode("ascii")}
    three = _VENDOR.read_text(encoding="utf-8")
    if "</script" in three.lower():                         # never in r160; guard the embedding anyway
        raise ModelingError("viewer", "three.js", "the vendored file contains '</script'")
    # inside <script>: no "<", ">" or "&" at all (JSON's \u escapes; JSON.parse gives them back)
    payload = json.dumps(data, allow_nan=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    fill = {"TITLE": html.escape(title), "THREE": three, "DATA": payload}
    # one pass over the template: a value is never searched for placeholders (a title "%THREE%" stays text)
    return _SLOT.sub(lambda m: fill[m.group(1)], _TEMPLATE)


def write_html(path, bodies, poses, times=None, statics=(), *, title: str = "nsopt", max_frames: int = 400,
               overwrite: bool = False) -> Path:
    """Write the page (see :func:`html_page`) to ``path``; the project's rule for writers applies
    (:class:`~nsopt.exceptions.OutputError` if it exists and not ``overwrite``)."""
    path = check_file(path, overwrite=overwrite, what="page")
    text = html_page(bodies, poses, times, statics, title=title, max_frames=max_frames)
    tmp = temporary_beside(path)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def still(path, bodies, pose, statics=(), *, title=None, elev=25.0, azim=-60.0, overwrite: bool = False,
          dpi: int = 120) -> Path:
    """A still image (PNG/SVG/PDF by the suffix) of the bodies at ``pose`` (n, 7): shaded triangles, labelled
    axes (x, y, z), the outline of the bodies' bounding box, static objects in grey."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    path = check_file(path, overwrite=overwrite, what="image")
    from matplotlib.backend_bases import FigureCanvasBase
    kinds = FigureCanvasBase.get_supported_filetypes()
    if path.suffix.lower().lstrip(".") not in kinds:
        raise OutputError(errno.EINVAL, f"unsupported image format {path.suffix!r}; the suffix picks one of "
                                        f"{', '.join('.' + k for k in sorted(kinds))}", path)
    bodies, poses, _ = _check(bodies, pose, None)
    if poses.shape[0] != 1:
        raise ModelingError("viewer", "pose", f"has shape {poses.shape}, expected ({len(bodies)}, 7): one pose per body")
    pose = poses[0]
    statics = _check_statics(statics)
    lo, hi = pose[:, :3].min(axis=0), pose[:, :3].max(axis=0)
    pad = max(1.0, 0.2 * float(np.ptp(pose[:, :3], axis=0).max()))
    extent = float(np.ptp(pose[:, :3], axis=0).max() + 4 * pad)
    fig = plt.figure(figsize=(6.4, 5.6))
    ax = fig.add_subplot(projection="3d")
    light = np.array([0.3, -0.4, 0.85])
    light /= np.linalg.norm(light)
    cache = {}
    blo, bhi = np.full(3, np.inf), np.full(3, -np.inf)

    def draw(contactors, p, color, alpha=1.0):
        nonlocal blo, bhi
        R = rot.rotation_matrix(p[3:7])
        for c in _contactors(contactors):
            if id(c.shape) not in cache:
                cache[id(c.shape)] = shape_mesh(c.shape, extent)
            V, F = cache[id(c.shape)]
            W = (V @ (R @ rot.rotation_matrix(c.orientation)).T) + (p[:3] + R @ c.translation)
            tri = W[F]
            nrm = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
            nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-15)
            shade = 0.45 + 0.55 * np.abs(nrm @ light)
            rgb = np.array(matplotlib.colors.to_rgb(color))
            ax.add_collection3d(Poly3DCollection(tri, facecolors=np.clip(rgb * shade[:, None], 0, 1), alpha=alpha,
                                                 edgecolor="none"))
            if not isinstance(c.shape, HalfSpace):
                blo, bhi = np.minimum(blo, W.min(axis=0)), np.maximum(bhi, W.max(axis=0))

    for cs, p in statics:
        draw(cs, np.asarray(p, dtype=float), "#c8c8c8", 0.35)
    for b, cs in enumerate(bodies):
        draw(cs, pose[b], PALETTE[b % len(PALETTE)])
    if np.isfinite(blo).all():                             # the outline: the bodies' bounding box
        corners = np.array([[x, y, z] for x in (blo[0], bhi[0]) for y in (blo[1], bhi[1]) for z in (blo[2], bhi[2])])
        for i in range(8):
            for j in range(i + 1, 8):
                if np.count_nonzero(corners[i] != corners[j]) == 1:
                    ax.plot(*zip(corners[i], corners[j]), color="0.4", lw=0.6, ls="--")
        lo, hi = np.minimum(lo, blo), np.maximum(hi, bhi)
    c, half = (lo + hi) / 2, max(0.5 * float(np.max(hi - lo)), 1.0) + 0.1
    ax.set_xlim(c[0] - half, c[0] + half)
    ax.set_ylim(c[1] - half, c[1] + half)
    ax.set_zlim(max(c[2] - half, min(lo[2], 0.0) - 0.1), c[2] + half)
    ax.set_box_aspect((1, 1, (ax.get_zlim()[1] - ax.get_zlim()[0]) / (2 * half)))
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_zlabel("z")
    ax.view_init(elev=elev, azim=azim)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


_SLOT = re.compile(r"%(TITLE|THREE|DATA)%")

_TEMPLATE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%TITLE%</title>
<style>
 html, body { margin: 0; height: 100%; background: #f4f4f4; font: 14px sans-serif; overflow: hidden; }
 #view { position: absolute; top: 0; left: 0; right: 0; bottom: 48px; }
 #bar { position: absolute; left: 0; right: 0; bottom: 0; height: 48px; display: flex; align-items: center;
        gap: 12px; padding: 0 12px; background: #fff; border-top: 1px solid #ccc; }
 #slider { flex: 1; }
 #time { width: 9em; font-variant-numeric: tabular-nums; }
</style></head>
<body><div id="view"></div>
<div id="bar"><button id="play">play</button><input id="slider" type="range" min="0" value="0" step="1">
<span id="time"></span><span>%TITLE%</span></div>
<script type="text/plain" id="three-src">%THREE%</script>
<script type="application/json" id="scene-data">%DATA%</script>
<script type="module">
const src = document.getElementById("three-src").textContent;
const THREE = await import(URL.createObjectURL(new Blob([src], { type: "text/javascript" })));
const D = JSON.parse(document.getElementById("scene-data").textContent);
const raw = Uint8Array.from(atob(D.poses), c => c.charCodeAt(0));
const P = new Float32Array(raw.buffer);
const view = document.getElementById("view");
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(window.devicePixelRatio);
view.appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0xf4f4f4);
scene.add(new THREE.HemisphereLight(0xffffff, 0x666666, 1.6));
const sun = new THREE.DirectionalLight(0xffffff, 1.4);
sun.position.set(3, -4, 8);
scene.add(sun);
const geoms = D.shapes.map(s => {
  const g = new THREE.BufferGeometry();
  g.setAttribute("position", new THREE.Float32BufferAttribute(s.v, 3));
  g.setIndex(s.f);
  g.computeVertexNormals();
  return g;
});
function part(p) {
  const m = new THREE.Mesh(geoms[p.shape], new THREE.MeshStandardMaterial({ color: p.color, flatShading: true,
                                                                            side: THREE.DoubleSide }));
  const o = p.offset;
  m.position.set(o[0], o[1], o[2]);
  m.quaternion.set(o[4], o[5], o[6], o[3]);
  return m;
}
function place(obj, q) { obj.position.set(q[0], q[1], q[2]); obj.quaternion.set(q[4], q[5], q[6], q[3]); }
for (const s of D.statics) {
  const g = new THREE.Group();
  s.parts.forEach(p => g.add(part(p)));
  place(g, s.pose);
  scene.add(g);
}
const groups = D.bodies.map(parts => { const g = new THREE.Group(); parts.forEach(p => g.add(part(p))); scene.add(g); return g; });
// camera: fit the first frame's bodies, z up; drag to turn, wheel to zoom
const box = new THREE.Box3();
for (let b = 0; b < D.n; b++) box.expandByPoint(new THREE.Vector3(P[7 * b], P[7 * b + 1], P[7 * b + 2]));
const centre = box.getCenter(new THREE.Vector3());
let radius = Math.max(3, box.getSize(new THREE.Vector3()).length() * 1.4 + 2);
const camera = new THREE.PerspectiveCamera(40, 1, 0.01, 1000);
camera.up.set(0, 0, 1);
let az = -0.9, el = 0.45;
function aim() {
  camera.position.set(centre.x + radius * Math.cos(el) * Math.cos(az), centre.y + radius * Math.cos(el) * Math.sin(az),
                      centre.z + radius * Math.sin(el));
  camera.lookAt(centre);
}
let drag = null;
renderer.domElement.addEventListener("pointerdown", e => { drag = [e.clientX, e.clientY]; });
window.addEventListener("pointerup", () => { drag = null; });
window.addEventListener("pointermove", e => {
  if (!drag) return;
  az -= (e.clientX - drag[0]) * 0.01; el = Math.max(-1.4, Math.min(1.4, el + (e.clientY - drag[1]) * 0.01));
  drag = [e.clientX, e.clientY]; aim(); draw();
});
renderer.domElement.addEventListener("wheel", e => { e.preventDefault(); radius *= Math.exp(e.deltaY * 0.001); aim(); draw(); },
                                     { passive: false });
const slider = document.getElementById("slider"), label = document.getElementById("time");
slider.max = String(D.frames - 1);
function setFrame(k) {
  k = Math.max(0, Math.min(D.frames - 1, k | 0));
  const base = k * D.n * 7;
  for (let b = 0; b < D.n; b++) place(groups[b], P.subarray(base + 7 * b, base + 7 * b + 7));
  slider.value = String(k);
  label.textContent = "t = " + D.times[k].toFixed(4);
  draw();
}
function draw() { renderer.render(scene, camera); }
function resize() {
  const w = view.clientWidth, h = view.clientHeight;
  renderer.setSize(w, h); camera.aspect = w / h; camera.updateProjectionMatrix(); draw();
}
slider.addEventListener("input", () => setFrame(Number(slider.value)));
let timer = null;
document.getElementById("play").addEventListener("click", e => {
  if (timer) { clearInterval(timer); timer = null; e.target.textContent = "play"; return; }
  e.target.textContent = "pause";
  timer = setInterval(() => setFrame((Number(slider.value) + 1) % D.frames), 40);
});
window.addEventListener("resize", resize);
aim(); resize(); setFrame(0);
window.nsoptViewer = { setFrame, frames: D.frames, ready: true };
</script></body></html>
"""
