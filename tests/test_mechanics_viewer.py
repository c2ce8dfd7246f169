"""The viewer: the offline page opened in headless Chromium (no console error, the bodies drawn, the slider
moves them) and the still images."""

import io
import shutil

import numpy as np
import pytest

from conftest import need_extra

need_extra("mechanics")

from nsopt import mechanics as mc  # noqa: E402
from nsopt.exceptions import ModelingError, OutputError  # noqa: E402
from nsopt.mechanics import viewer  # noqa: E402
from nsopt.modeling import _rotation as rot  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
BACKGROUND = np.array([0xF4, 0xF4, 0xF4])


def _scene(steps=30):
    bodies = [[mc.Contactor(mc.Box([1, 1, 1]))], [mc.Contactor(mc.Sphere(0.5))], [mc.Contactor(mc.Capsule(0.2, 1.0))],
              [mc.Contactor(mc.Cylinder(0.3, 0.8)), mc.Contactor(mc.Cone(0.3, 0.6), translation=[0, 0.7, 0])],
              [mc.Contactor(mc.ConvexMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]))]]
    t = np.linspace(0.0, 1.0, steps)
    poses = np.zeros((steps, len(bodies), 7))
    for k in range(steps):
        for b in range(len(bodies)):
            poses[k, b] = np.r_[1.5 * b - 3.0, 3.0 * t[k] * (b % 2), 2.5 - 2.0 * t[k] + 0.4 * b,
                                rot.quat_exp([2 * t[k] * b, 0.3 * b, 0.0])]
    statics = [([mc.Contactor(mc.HalfSpace())], [0, 0, 0, 1, 0, 0, 0])]
    return bodies, poses, t, statics


def _pixels(png_bytes):
    import matplotlib.image as mpimg
    img = mpimg.imread(io.BytesIO(png_bytes), format="png")[..., :3]
    return np.round(img * 255).astype(int)


@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="chromium absent")
def test_page_in_headless_chromium(tmp_path):
    need_extra("test", ["playwright"])
    import playwright.sync_api as playwright
    bodies, poses, t, statics = _scene()
    page_path = viewer.write_html(tmp_path / "scene.html", bodies, poses, t, statics, title="test scene")
    text = page_path.read_text()
    assert "<script src=" not in text and "import(" in text      # nothing fetched: three.js is in the page
    errors = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 800, "height": 600})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: errors.append("network request " + r.url) if not r.url.startswith(("file:", "blob:", "data:")) else None)
            page.goto(page_path.as_uri())
            page.wait_for_function("window.nsoptViewer && window.nsoptViewer.ready", timeout=60_000)
            assert page.evaluate("window.nsoptViewer.frames") == len(t)
            first = _pixels(page.screenshot())
            # the slider, as a user moves it
            page.evaluate("s => { const e = document.getElementById('slider'); e.value = s; "
                          "e.dispatchEvent(new Event('input')); }", str(len(t) - 1))
            last = _pixels(page.screenshot())
            label = page.inner_text("#time")
        finally:
            browser.close()
    assert not errors, errors
    view = first[:540]                                          # the canvas, above the control bar
    drawn = np.any(np.abs(view - BACKGROUND) > 12, axis=-1)
    assert drawn.mean() > 0.05                                  # bodies and floor drawn
    # the bodies' colours are there (blue box, orange sphere)
    for colour in ((0x4E, 0x79, 0xA7), (0xF2, 0x8E, 0x2B)):
        close = np.all(np.abs(view - np.array(colour)) < 60, axis=-1)
        assert close.sum() > 50, colour
    moved = np.any(np.abs(last[:540] - view) > 12, axis=-1)
    assert moved.mean() > 0.005                                 # the slider moved them
    assert label == "t = 1.0000"


def test_page_keeps_at_most_max_frames_and_checks_input(tmp_path):
    bodies, poses, t, statics = _scene(steps=50)
    html = viewer.html_page(bodies, poses, t, statics, max_frames=10)
    assert '"frames": 10' in html
    with pytest.raises(ModelingError, match="poses.*expected"):
        viewer.html_page(bodies, poses[:, :2], t)
    with pytest.raises(ModelingError, match="times"):
        viewer.html_page(bodies, poses, t[:3])
    viewer.write_html(tmp_path / "a.html", bodies, poses, t)
    with pytest.raises(OutputError):
        viewer.write_html(tmp_path / "a.html", bodies, poses, t)


def test_still_image(tmp_path):
    bodies, poses, t, statics = _scene()
    path = viewer.still(tmp_path / "still.png", bodies, poses[-1], statics, title="still")
    img = _pixels(path.read_bytes())
    assert img.shape[0] > 400 and img.shape[1] > 400
    coloured = np.ptp(img, axis=-1) > 40                        # saturated (body) pixels
    assert coloured.mean() > 0.01


def test_shape_meshes_are_closed_and_sized():
    import trimesh
    for shape, volume in ((mc.Box([1, 2, 3]), 6.0), (mc.Sphere(0.5), 4 / 3 * np.pi * 0.125),
                          (mc.Capsule(0.2, 1.0), np.pi * 0.04 * 1.0 + 4 / 3 * np.pi * 0.008),
                          (mc.Cylinder(0.3, 0.8), np.pi * 0.09 * 0.8), (mc.Cone(0.3, 0.6), np.pi * 0.09 * 0.6 / 3)):
        V, F = viewer.shape_mesh(shape)
        m = trimesh.Trimesh(V, F)
        assert m.is_watertight
        assert m.volume == pytest.approx(volume, rel=0.06)          # faceted approximations of curved shapes
    V, _ = viewer.shape_mesh(mc.Capsule(0.2, 1.0))
    assert np.ptp(V[:, 1]) == pytest.approx(1.4) and np.ptp(V[:, 2]) < 0.41   # along y, as Siconos
