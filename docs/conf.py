"""Sphinx configuration of the nsopt site (build: see README.md, "Documentation").

Environment read here:
  NSOPT_QUICK   1 (default for the site): the long examples and tutorials run a reduced case
                (fewer steps, a shorter budget, a smaller corpus folder); 0: the full cases.
  NSOPT_DATA    the shared Siconos corpus (pages that use it say so; without it they run the
                generated problems only).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

# What the executed pages and the gallery scripts see (the kernels inherit this environment).
os.environ.setdefault("NSOPT_QUICK", "1")
# figures of the executed pages: the inline backend of the kernels (the gallery sets its own)
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
os.environ["NSOPT_FIGURES"] = os.environ.get("NSOPT_FIGURES") or str(DOCS / "_build" / "figures")
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

import nsopt  # noqa: E402

project = "nsopt"
author = "the nsopt developers"
copyright = "the nsopt developers, Apache-2.0"
release = version = nsopt.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
    "sphinx_gallery.gen_gallery",
    "sphinx_design",
    "sphinx_copybutton",
    "sphinx-mathjax-offline",      # MathJax 3 served from the built site (works offline)
    "nsopt_docs",                  # docs/_ext: derivations, the methods table, the API pages
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5",
                    "siconos/*.py"]
templates_path = ["_templates"]
root_doc = "index"

# ---------------------------------------------------------------- MyST and MyST-NB (executed tutorials)
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "substitution"]
myst_heading_anchors = 3
myst_dmath_double_inline = True
nb_execution_mode = "force"            # every code cell runs at every build
nb_execution_raise_on_error = True     # a raising cell fails the build
nb_execution_show_tb = True
nb_execution_timeout = 900
nb_merge_streams = True
nb_ipywidgets_js = {}                  # no widget JavaScript from a CDN: the site works offline
nb_render_image_options = {"align": "center"}

# ---------------------------------------------------------------- math
math_number_all = False
math_eqref_format = "({number})"
numfig = True
math_numfig = False        # equations numbered per page (1), (2), ... (numfig would count across pages)

# ---------------------------------------------------------------- API reference
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_typehints = "none"
autoclass_content = "class"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# ---------------------------------------------------------------- gallery (examples/)
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/[^_/][^/]*\.py$",     # every script runs (not the helper _plotting.py)
    "ignore_pattern": r"^_|__init__\.py$",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": True,
    "capture_repr": (),
    "reset_modules": ("matplotlib",),
    "download_all_examples": False,
    "show_memory": False,
    "write_computation_times": False,     # its summary page loads jQuery and DataTables from a CDN
    "show_signature": False,
    "remove_config_comments": True,
    "default_thumb_file": str(DOCS / "_static" / "thumb.png"),
}

# ---------------------------------------------------------------- HTML
html_theme = "pydata_sphinx_theme"
html_title = "nsopt"
html_favicon = "_static/favicon.png"
html_static_path = ["_static"]
html_css_files = ["nsopt.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "use_edit_page_button": False,
    "header_links_before_dropdown": 8,
    "secondary_sidebar_items": ["page-toc"],     # (the derivations remove it: wide equations)
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
