"""tests/site is collected only when NSOPT_SITE names a built site (see test_browser.py's docstring)."""
import os

if not os.environ.get("NSOPT_SITE"):
    collect_ignore_glob = ["test_*.py"]
