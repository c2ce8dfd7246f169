"""The built site, opened page by page in a real browser (headless Chromium driven by Playwright).

Run after building the site (README.md, "Documentation"); ``.ci/run`` does::

    NSOPT_SITE=docs/_build/html python -m pytest tests/site -p no:cacheprovider

This folder is collected only when ``NSOPT_SITE`` is set (``tests/conftest.py``): the normal
``python -m pytest`` run neither needs a built site nor a browser. With ``NSOPT_SITE`` set, a missing
site, browser or Playwright is a failure, not a skip.

The site is served from 127.0.0.1 by a local HTTP server; Chromium is Debian's ``/usr/bin/chromium``
(``NSOPT_CHROMIUM`` overrides it), started with the flags of a machine without internet. For every
page (every ``.html`` file but ``_static/``):

* no console error and no failed request (a request that fails, or answers 400 or more; a request
  aborted because the test moved on to the next page is not a failure: images are checked below);
* every image loaded (``naturalWidth > 0``, lazy images forced to load);
* every internal link resolves to a file of the site and, with ``#anchor``, to an element of that
  page with that id;
* where the page has math (Sphinx's ``.math`` elements), MathJax typeset it: at least as many
  ``mjx-container`` elements as math elements, and no MathJax error element.

Then the search page finds "Lemke", "Coulomb", "sensitivity" and "NewtonEulerDS", every gallery
example has a figure (no placeholder thumbnail), and screenshots of the start page, tutorial 3, the
gallery's index and two of its pages, the rigid-bodies and sensitivity pages are saved to ``$NSOPT_SCREENSHOTS`` (default: ``<site>/../screenshots``), with the
counts checked in ``checked.json`` there.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

SITE = Path(os.environ.get("NSOPT_SITE", "docs/_build/html")).resolve()
CHROMIUM = os.environ.get("NSOPT_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = Path(os.environ.get("NSOPT_SCREENSHOTS", SITE.parent / "screenshots"))
SCREENSHOTS = {"start": "index.html", "tutorial_3": "tutorials/03_coulomb_cone.html",
               "gallery": "auto_examples/modeling_spheres_box.html", "rigid_bodies": "guide/rigid_bodies.html",
               "sensitivity": "guide/sensitivity.html", "gallery_index": "auto_examples/index.html",
               "gallery_lemke": "auto_examples/lcp_lemke.html"}


def pages() -> list[str]:
    return sorted(str(p.relative_to(SITE)) for p in SITE.rglob("*.html")
                  if p.relative_to(SITE).parts[0] != "_static")


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id" or (k == "name" and tag == "a"):
                self.ids.add(v)


@functools.lru_cache(maxsize=None)
def ids_of(path: Path) -> frozenset:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


@pytest.fixture(scope="module")
def server():
    assert (SITE / "index.html").is_file(), f"no built site at {SITE} (build it first: README.md, Documentation)"

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).is_file(), f"Chromium not found at {CHROMIUM} (Debian package chromium)"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


class Tab:
    """One browser page reused for every URL, collecting the problems of the current one."""

    def __init__(self, browser):
        self.problems = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        p = self.page
        p.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        p.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        p.on("requestfailed", lambda r: None if r.failure == "net::ERR_ABORTED" else   # left behind by the
             self.problems.append(f"request failed: {r.url} ({r.failure})"))              # next navigation
        p.on("response", lambda r: self.problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)

    def open(self, url):
        self.problems = []
        self.page.goto(url, wait_until="load")
        return self.page

    def close(self):
        self.page.close()


_WAIT_IMAGES = """async () => {
  const imgs = Array.from(document.images);
  imgs.forEach(i => { i.loading = "eager"; });
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
  return imgs.map(i => [i.currentSrc || i.src, i.naturalWidth]);
}"""
_WAIT_MATH = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  return [document.querySelectorAll('.math').length, document.querySelectorAll('mjx-container').length,
          document.querySelectorAll('mjx-merror').length, !!window.MathJax];
}"""
_LINKS = "() => Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))"


def _check_link(page_rel: str, href: str, base: str):
    """None when the internal link resolves, else the reason; external links are not followed."""
    url = urljoin(base + page_rel, href)
    if not url.startswith(base):
        return None
    parts = urlsplit(url)
    rel = unquote(parts.path[len(urlsplit(base).path):]) or "index.html"
    target = SITE / rel
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file():
        return f"link {href!r} -> missing file {rel}"
    if parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in ids_of(target):
        return f"link {href!r} -> no element with id {parts.fragment!r} in {rel}"
    return None


def test_every_page_in_a_browser(server, browser):
    all_pages = pages()
    assert len(all_pages) > 50, f"only {len(all_pages)} pages in {SITE}"
    failures, counts = {}, {"pages": 0, "images": 0, "internal_links": 0, "pages_with_math": 0,
                            "math_elements": 0, "mathjax_containers": 0}
    tab = Tab(browser)
    for rel in all_pages:
        page = tab.open(server + rel)
        problems = tab.problems
        for src, width in page.evaluate(_WAIT_IMAGES):
            counts["images"] += 1
            if not width:
                problems.append(f"image not loaded: {src}")
        n_math, n_mjx, n_err, has_mathjax = page.evaluate(_WAIT_MATH)
        if n_math:
            counts["pages_with_math"] += 1
            counts["math_elements"] += n_math
            counts["mathjax_containers"] += n_mjx
            if not has_mathjax or n_mjx < n_math or n_err:
                problems.append(f"math not typeset: {n_math} math elements, {n_mjx} MathJax outputs, "
                                f"{n_err} MathJax errors, MathJax loaded: {has_mathjax}")
        for href in page.evaluate(_LINKS):
            if href.startswith(("mailto:", "javascript:")):
                continue
            if urljoin(server + rel, href).startswith(server):
                counts["internal_links"] += 1
            why = _check_link(rel, href, server)
            if why:
                problems.append(why)
        counts["pages"] += 1
        if problems:
            failures[rel] = sorted(set(problems))
    tab.close()
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "checked.json").write_text(json.dumps(counts, indent=1))
    (SHOTS / "failures.json").write_text(json.dumps(failures, indent=1))
    print("browser check:", counts)
    assert not failures, json.dumps(failures, indent=1)[:20000]


@pytest.mark.parametrize("word", ["Lemke", "Coulomb", "sensitivity", "NewtonEulerDS"])
def test_search_finds(server, browser, word):
    tab = Tab(browser)
    page = tab.open(f"{server}search.html?q={word}")
    try:
        page.wait_for_function("() => document.querySelectorAll('#search-results li, ul.search li').length > 0",
                               timeout=30000)
        hits = page.evaluate("() => Array.from(document.querySelectorAll('#search-results li, ul.search li'))"
                             ".map(li => li.innerText.split('\\n')[0])")
        problems = tab.problems
    finally:
        tab.close()
    assert hits, f"the search page found nothing for {word!r}"
    assert not problems, problems
    print(f"search {word!r}: {len(hits)} results, first {hits[:3]}")


def test_screenshots(server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab = Tab(browser)
    for name, rel in SCREENSHOTS.items():
        page = tab.open(server + rel)
        page.evaluate(_WAIT_IMAGES)
        page.evaluate(_WAIT_MATH)
        page.wait_for_timeout(500)                 # fonts and the icons of the theme settle
        out = SHOTS / f"{name}.png"
        page.screenshot(path=str(out), full_page=True, clip={"x": 0, "y": 0, "width": 1280, "height": 2000})
        assert out.stat().st_size > 10_000, f"{out} looks empty"
        assert not tab.problems, tab.problems
    tab.close()


def test_every_gallery_example_shows_a_figure():
    """Each example of the gallery draws a figure, its page's picture and its thumbnail (an example
    without one gets sphinx-gallery's placeholder thumbnail, issue 29 §1; the rigid-body examples
    take their scene's still, their first figure, as thumbnail: tests/test_examples.py)."""
    examples = sorted(p.stem for p in (SITE / "auto_examples").glob("*.html") if p.stem != "index")
    assert len(examples) >= 10, examples
    images = SITE / "_images"
    missing = [e for e in examples if not list(images.glob(f"sphx_glr_{e}_001.png"))]
    assert not missing, f"gallery examples without a figure (placeholder thumbnail): {missing}"
