"""Build the collection as a static site (Jupyter Book 1.x) from the committed notebooks, and check it.

    make book                                 # build into build/book/_build/html and check it
    python tools/book.py --out DIR            # the same, into DIR/_build/html

Nothing is executed: the book shows the outputs committed in the notebooks (`execute_notebooks: "off"` in
book/_config.yml), so it needs no backend and no kernel. The table of contents is not typed anywhere: `toc()`
writes it at build time, into the build folder, from tools/notebook_list.py (lessons in number order, then
their solutions), and the book's root is the project's root, with README.md as the landing page, so the
notebooks' `../README.md` links and the README's `notebooks/...` links resolve in the book as they do on
GitHub and in Lab. Nothing is copied into the tree.

`problems(html_dir)` lists what is wrong with a built book: a notebook without its page, a committed PNG chart
missing from its page, a relative link or image that points at no file of the build. tests/test_book.py builds
the book and asserts that list is empty.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebook_list import NOTEBOOKS, ROOT, notebooks  # noqa: E402

CONFIG = ROOT / "book" / "_config.yml"
DEFAULT_OUT = ROOT / "build" / "book"
LANDING = "README"
EXTRA_PAGES = ["CONTRIBUTING", "WORKSHOP"]  # the README links to them; in the book each is a page of its own


def toc(paths: list[Path] | None = None) -> dict:
    """The book's table of contents (sphinx-external-toc's `jb-book` format), from the notebooks' order."""
    paths = notebooks() if paths is None else paths
    lessons = [p for p in paths if p.parent == NOTEBOOKS]
    solutions = [p for p in paths if p.parent == NOTEBOOKS / "solutions"]
    doc = lambda p: p.relative_to(ROOT).with_suffix("").as_posix()
    parts = [{"caption": "Lessons", "chapters": [{"file": doc(p)} for p in lessons]},
             {"caption": "Solutions to the exercises", "chapters": [{"file": doc(p)} for p in solutions]},
             {"caption": "Maintaining the collection", "chapters": [{"file": page} for page in EXTRA_PAGES]}]
    return {"format": "jb-book", "root": LANDING, "parts": [part for part in parts if part["chapters"]]}


def build(out: Path = DEFAULT_OUT, strict: bool = True) -> Path:
    """Build the book under `out` (the generated _toc.yml beside it) and return the HTML folder.

    strict: any Sphinx warning (a link to a missing notebook, a broken cross-reference) fails the build,
    with the warnings printed. Raises subprocess.CalledProcessError if the build fails."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    toc_file = out / "_toc.yml"
    toc_file.write_text("# Written by tools/book.py at build time from tools/notebook_list.py\n"
                        + yaml.safe_dump(toc(), sort_keys=False))
    command = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(ROOT),
               "--config", str(CONFIG), "--toc", str(toc_file), "--path-output", str(out), "--quiet"]
    if strict:
        command += ["--warningiserror", "--keep-going"]
    subprocess.run(command, check=True, cwd=ROOT)
    return out / "_build" / "html"


class _Page(HTMLParser):
    """The links (href/src) of one HTML page, and the images inside its notebook cells' outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.output_images: list[str] = []
        self._divs: list[bool] = []  # one entry per open <div>: is it a cell's output?

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        for name in ("href", "src"):
            if attr.get(name):
                self.links.append(attr[name])
        if tag == "div":
            self._divs.append("cell_output" in (attr.get("class") or "").split())
        if tag == "img" and any(self._divs) and attr.get("src"):
            self.output_images.append(attr["src"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._divs:
            self._divs.pop()


def _parse(page: Path) -> _Page:
    parser = _Page()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _target(page: Path, link: str) -> Path | None:
    """The file a relative link of `page` points at, or None if the link is not a relative one."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or not parts.path:  # http:, mailto:, data:, //host, #anchor
        return None
    path = unquote(parts.path)
    target = (page.parent / path).resolve()
    return target / "index.html" if path.endswith("/") else target


def broken_links(html_dir: Path) -> list[str]:
    """Every relative href/src of every page of the build that points at no file inside the build."""
    html_dir = Path(html_dir).resolve()
    broken = []
    for page in sorted(html_dir.rglob("*.html")):
        if "_static" in page.relative_to(html_dir).parts:
            continue
        for link in _parse(page).links:
            target = _target(page, link)
            if target is not None and not (target.is_file() and target.is_relative_to(html_dir)):
                broken.append(f"{page.relative_to(html_dir)}: {link}")
    return broken


def page_of(html_dir: Path, notebook: Path) -> Path:
    """The HTML page the book makes of a notebook."""
    return Path(html_dir) / notebook.resolve().relative_to(ROOT).with_suffix(".html")


def committed_charts(notebook: Path) -> Counter[str]:
    """The sha256 of every PNG output committed in a notebook (a chart drawn twice counts twice)."""
    nb = nbformat.read(notebook, as_version=4)
    return Counter(hashlib.sha256(base64.b64decode(output["data"]["image/png"])).hexdigest()
                   for cell in nb.cells if cell.cell_type == "code"
                   for output in cell.get("outputs", []) if "image/png" in output.get("data", {}))


def page_charts(page: Path) -> Counter[str]:
    """The sha256 of every image a page shows inside its cells' outputs (missing files count as 'missing')."""
    found: Counter[str] = Counter()
    for src in _parse(page).output_images:
        target = _target(page, src)
        found["missing" if target is None or not target.is_file()
              else hashlib.sha256(target.read_bytes()).hexdigest()] += 1
    return found


def problems(html_dir: Path, paths: list[Path] | None = None) -> list[str]:
    """What is wrong with a built book: missing pages, charts missing from their page, broken relative links."""
    html_dir = Path(html_dir)
    found = []
    for notebook in notebooks() if paths is None else paths:
        page = page_of(html_dir, notebook)
        name = notebook.relative_to(ROOT).as_posix()
        if not page.is_file():
            found.append(f"{name}: no page {page.relative_to(html_dir)}")
            continue
        want, got = committed_charts(notebook), page_charts(page)
        if want != got:
            found.append(f"{name}: {sum(want.values())} PNG charts committed, {sum((want & got).values())} of them "
                         f"in its page ({sum(got.values())} output images there)")
    if not (html_dir / "index.html").is_file():
        found.append("no index.html (the landing page)")
    return found + [f"broken link {link}" for link in broken_links(html_dir)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="build folder (default: build/book)")
    args = parser.parse_args(argv)
    html_dir = build(args.out)
    found = problems(html_dir)
    for problem in found:
        print(problem, file=sys.stderr)
    charts = sum(sum(committed_charts(nb).values()) for nb in notebooks())
    print(f"book: {len(notebooks())} notebooks, {charts} charts, {len(found)} problems -> {html_dir / 'index.html'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
