"""Every committed notebook renders on GitHub and is committed normalised.

GitHub renders a notebook with nbconvert's HTML exporter, so `jupyter nbconvert --to html`
(here: `HTMLExporter`, in-process) reproduces what a reader on GitHub sees. The checks read
the committed files only; nothing is executed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest
from nbconvert import HTMLExporter

from notebook_kernel import ROOT, code_cells, may_raise, notebook_id, notebook_paths, read

sys.path.insert(0, str(ROOT / "tools"))
from notebook_list import NBSTRIPOUT_FLAGS  # noqa: E402

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

NOTEBOOKS = notebook_paths()
MAX_BYTES = 1_000_000
ANSI = re.compile(r"\x1b\[|\\u001b\[")
MACHINE_PATHS = re.compile(r"(/work/|/tmp/|/root/|/home/)")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")


def outputs(nb):
    for index, cell in code_cells(nb):
        for output in cell.get("outputs", []):
            yield index, cell, output


def output_texts(output) -> list[str]:
    """Every piece of text in an output (images left out: base64 may contain anything)."""
    texts = []
    if output.get("output_type") == "stream":
        texts.append(output.get("text", ""))
    elif output.get("output_type") == "error":
        texts += [output.get("ename", ""), output.get("evalue", ""), *output.get("traceback", [])]
    for mime, value in output.get("data", {}).items():
        if mime not in IMAGE_TYPES:
            texts.append(value if isinstance(value, str) else json.dumps(value))
    return texts


@pytest.fixture(scope="module")
def html():
    cache: dict[Path, str] = {}

    def get(path: Path) -> str:
        if path not in cache:
            body, _ = HTMLExporter().from_filename(str(path))
            cache[path] = body
        return cache[path]

    return get


by_notebook = pytest.mark.parametrize("path", NOTEBOOKS, ids=notebook_id)


@pytest.fixture(scope="module")
def stripped_by_nbstripout() -> dict[Path, str]:
    """One `nbstripout --verify` over every notebook: {notebook it would change: what it said}."""
    nbstripout = [sys.executable, "-m", "nbstripout", *NBSTRIPOUT_FLAGS, "--verify"]
    done = subprocess.run([*nbstripout, *map(str, NOTEBOOKS)], capture_output=True, text=True)
    said = done.stdout + done.stderr
    changed = {path: line for path in NOTEBOOKS for line in said.splitlines() if line.endswith(str(path))}
    assert done.returncode == 0 or changed, f"nbstripout failed: {said}"
    return changed


@by_notebook
def test_is_a_valid_notebook(path):
    """nbconvert (and so GitHub) refuses a notebook that fails nbformat's schema."""
    nbformat.validate(nbformat.read(path, as_version=nbformat.NO_CONVERT))


@by_notebook
def test_converts_to_html(path, html):
    body = html(path)
    assert "<html" in body and len(body) > 1000


@by_notebook
def test_every_chart_is_an_embedded_png(path, html):
    nb = read(path)
    svg = [i for i, _, o in outputs(nb) if "image/svg+xml" in o.get("data", {})]
    assert svg == [], f"cells with SVG output (not byte-stable; use PNG): {svg}"
    page = html(path)
    body = page[page.find("<body"):]  # the template's own CSS carries SVG icons; the cells start here
    assert "<svg" not in body and "image/svg+xml" not in body
    images = sum(1 for _, _, o in outputs(nb) if "image/png" in o.get("data", {}))
    assert body.count('src="data:image/png;base64,') == images


@by_notebook
def test_no_figure_text_without_its_image(path):
    nb = read(path)
    bare = [
        i for i, _, o in outputs(nb)
        if any("<Figure size" in t for t in output_texts(o)) and "image/png" not in o.get("data", {})
    ]
    assert bare == [], f"cells printing '<Figure size ...>' with no image next to it: {bare}"


@by_notebook
def test_no_ansi_escape_codes(path, html):
    nb = read(path)
    found = [i for i, _, o in outputs(nb) if any(ANSI.search(t) for t in output_texts(o))]
    assert found == [], f"cells with ANSI colour codes in their output: {found}"
    assert "\x1b[" not in html(path)


@by_notebook
def test_no_paths_of_this_machine(path):
    nb = read(path)
    found = [
        (i, m.group(0)) for i, _, o in outputs(nb) for t in output_texts(o) for m in [MACHINE_PATHS.search(t)] if m
    ]
    assert found == [], f"outputs naming a path of this machine: {found}"
    metadata = json.dumps(nb.metadata) + json.dumps([c.get("metadata", {}) for c in nb.cells])
    assert not MACHINE_PATHS.search(metadata)


@by_notebook
def test_no_errors_unless_marked(path):
    nb = read(path)
    errors = [i for i, cell, o in outputs(nb) if o.get("output_type") == "error" and not may_raise(cell)]
    assert errors == [], f"cells committed with an error output: {errors}"


@by_notebook
def test_no_widget_state_missing(path):
    widgets = read(path).metadata.get("widgets")
    assert widgets is None or all("state" in v for v in widgets.values())


@by_notebook
def test_file_is_under_1_mb(path):
    assert path.stat().st_size < MAX_BYTES


@by_notebook
def test_every_code_cell_ran_once_in_order(path):
    raw = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in raw["cells"] if c["cell_type"] == "code"]
    assert all("outputs" in c for c in code), "a code cell without an `outputs` key does not render on GitHub"
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), f"execution counts {counts}"
    for c in code:
        for o in c["outputs"]:
            if o["output_type"] == "execute_result":
                assert o.get("execution_count") == c["execution_count"]


@by_notebook
def test_is_committed_normalised(path, stripped_by_nbstripout):
    """`nbstripout --verify` with the project's flags passes, and nbformat writes the file back byte for byte."""
    assert path not in stripped_by_nbstripout, (
        f"not normalised; run tools/refresh_notebooks.py: {stripped_by_nbstripout.get(path)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    assert nbformat.writes(notebook) + "\n" == path.read_text(encoding="utf-8"), (
        "not in nbformat's layout (indent, key order, final newline); run tools/refresh_notebooks.py")


# --- links ---------------------------------------------------------------------------------
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def relative_links(markdown: str) -> list[str]:
    text = INLINE_CODE.sub("", FENCE.sub("", markdown))
    links = MARKDOWN_LINK.findall(text) + HTML_LINK.findall(text)
    return [
        link for link in links
        if not re.match(r"^[a-z][a-z0-9+.-]*:", link, re.IGNORECASE) and not link.startswith(("#", "//"))
    ]


def broken(links: list[str], base: Path) -> list[str]:
    missing = []
    for link in links:
        target = unquote(link.split("#", 1)[0].split("?", 1)[0])
        if target and not (base / target).exists():
            missing.append(link)
    return missing


@by_notebook
def test_relative_links_in_markdown_cells_exist(path):
    nb = read(path)
    links = [link for cell in nb.cells if cell.cell_type == "markdown" for link in relative_links(cell.source)]
    assert broken(links, path.parent) == []


def test_relative_links_in_readme_exist():
    readme = ROOT / "README.md"
    assert broken(relative_links(readme.read_text(encoding="utf-8")), ROOT) == []


def test_link_finder_finds_what_it_should():
    text = "[a](x.ipynb) ![img](pics/p.png) [web](https://x.org) [anchor](#top) `[no](code.md)` <a href='y.md'>y</a>"
    assert relative_links(text) == ["x.ipynb", "pics/p.png", "y.md"]
