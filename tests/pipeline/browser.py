"""The reports opened in a real headless browser (Debian's Chromium, where installed):
the DOM after plotly.js ran, to check every chart was drawn."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path


def find_browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def rendered_dom(browser: str, page: Path, profile: Path) -> str:
    """``page`` loaded and its scripts run (virtual time: no fixed wait), the DOM dumped."""
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",  # nothing to fetch: the report is self-contained
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        page.as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, timeout=120, check=True).stdout.decode("utf-8", "replace")


def drawn_charts(dom: str) -> int:
    """How many charts plotly drew: a graph div is classed js-plotly-plot once drawn,
    and holds its SVG; a chart that failed to draw fails the check."""
    charts = len(re.findall(r'class="plotly-graph-div js-plotly-plot"', dom))
    undrawn = len(re.findall(r'class="plotly-graph-div"', dom))
    assert undrawn == 0, f"{undrawn} charts not drawn"
    assert dom.count('class="main-svg"') >= charts
    return charts
