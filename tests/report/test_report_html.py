"""The HTML report is self-contained and renders in a real browser (headless Chromium)
with its tables and both embedded figures."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from openmsd_build.report.command import build_report

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, dict]:
    """A full small build (the same hand-made root as test_report.py) and its report."""
    import test_report

    out = tmp_path_factory.mktemp("out")
    test_report._build(out, test_report.ALL)
    return out / "report" / "report.html", build_report(str(out), top=5, rate_per_host=1.0)


def test_html_is_self_contained(report):
    html_path, _ = report
    html = html_path.read_text(encoding="utf-8")
    images = re.findall(r'<img [^>]*src="([^"]*)"', html)
    assert len(images) == 2 and all(src.startswith("data:image/png;base64,") for src in images)
    assert html.count('<img alt="Top 5 languages by papers" src="data:image/png;base64,') == 1
    assert html.count('<img alt="Top 5 categories by papers" src="data:image/png;base64,') == 1
    # nothing is loaded from anywhere: no src/href other than data URIs, no scripts, no CSS imports
    assert not re.search(r'\b(?:src|href)\s*=\s*"(?!data:)', html)
    assert "<script" not in html and "@import" not in html and "url(" not in html
    assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", html.replace("file://", ""))


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture()
def chromium():
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        pytest.skip(f"headless Chromium not installed at {CHROMIUM} (CI: apt-get install -y chromium)")


def test_chromium_screenshot_shows_figures(report, chromium, tmp_path):
    html_path, _ = report
    png = tmp_path / "report.png"
    proc = _chromium(
        tmp_path, f"--screenshot={png}", "--window-size=1280,2000", "--hide-scrollbars", html_path.as_uri()
    )
    assert png.exists(), proc.stderr[-2000:]
    assert png.stat().st_size > 10_000

    from matplotlib import image

    pixels = image.imread(str(png))  # float RGB(A) in [0, 1]
    assert pixels.shape[0] == 2000 and pixels.shape[1] == 1280
    flat = pixels[..., :3].reshape(-1, 3)
    colours = {tuple((flat[i] * 255).round().astype(int)) for i in range(0, flat.shape[0], 97)}
    assert len(colours) > 20, "screenshot is (nearly) a single colour"
    # The bar colour of the figures (#3b6ea8) must be on screen: the PNGs were decoded and drawn.
    bar = (0x3B, 0x6E, 0xA8)
    rgb = (flat * 255).round().astype(int)
    near = (abs(rgb - bar).max(axis=1) <= 3).sum()
    assert near > 2000, f"only {near} pixels of the bar colour: figures not rendered"


def test_chromium_dom_has_tables(report, chromium, tmp_path):
    html_path, stats = report
    proc = _chromium(tmp_path, "--dump-dom", html_path.as_uri())
    dom = proc.stdout
    assert "Table 1" in dom and "Table 2" in dom and "Table 3" in dom and "Fetch health" in dom, proc.stderr[-2000:]
    assert dom.count("<table>") >= 8
    t = stats["table1"]
    assert f"<td>{t['papers']:,}</td>" in dom and f"<td>{t['total_tokens']:,}</td>" in dom
    assert "journal.example.org" in dom and "nonEn-nonEn" in dom
    assert dom.count("data:image/png;base64,") == 2
