"""The documentation: the README stays short and its links lead somewhere; the site builds.

mkdocs.yml sets ``strict: true`` and its ``validation`` turns broken links, missing
anchors and pages left out of the nav into warnings, so a clean strict build means every
link inside docs/ resolves. The README is not part of the site, so its relative links are
checked here directly.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_BYTES = 15_000

# Inline links and images: [text](target) or ![alt](target "title").
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# Reference definitions: [label]: target
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def relative_links(markdown: str) -> list[str]:
    """The relative link targets of a Markdown text, code blocks left out."""
    text = FENCE.sub("", markdown)
    targets = INLINE_LINK.findall(text) + REFERENCE_LINK.findall(text)
    relative = []
    for target in targets:
        parts = urlsplit(target)
        # A scheme (https:, mailto:) or a host is not a file of the repository; a bare
        # "#anchor" points into the README itself.
        if parts.scheme or parts.netloc or not parts.path:
            continue
        relative.append(target)
    return relative


def test_readme_is_short() -> None:
    size = README.stat().st_size
    assert size < README_MAX_BYTES, f"README.md is {size} bytes; move detail into docs/"


def test_readme_relative_links_exist() -> None:
    links = relative_links(README.read_text(encoding="utf-8"))
    assert links, "README.md should link into docs/"
    missing = [link for link in links if not (ROOT / unquote(urlsplit(link).path)).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_relative_links_parser() -> None:
    text = (
        '[a](docs/a.md) ![b](img/b.png "t") [c](https://x.org/c.md) [d](#here)\n'
        "[e](docs/e.md#part)\n```sh\n[f](not/a/link.md)\n```\n[g]: docs/g.md\n"
    )
    assert relative_links(text) == ["docs/a.md", "img/b.png", "docs/e.md#part", "docs/g.md"]


def test_site_builds_strict(tmp_path: Path) -> None:
    # The same interpreter as the tests, so the venv's mkdocs (the `test` extra) is used.
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "performance" / "index.html").is_file()
