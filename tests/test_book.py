"""`make book`: the collection builds as a static site from its committed outputs, and nothing is lost on the way.

The book is built once per run into a temporary folder (tools/book.py, Jupyter Book with execution off: no kernel,
no backend), then read back: every notebook has its page, every committed PNG chart is in its page (byte for
byte), every relative link and image of every page points at a file of the build.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent  # reads committed files only: run on the moto tier only

pytest.importorskip("jupyter_book", reason="Jupyter Book is not installed: make book (requirements-dev.txt)")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import book  # noqa: E402

# Found here with a glob of their own, not through tools/notebook_list.py, which the book's contents come from.
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return book.build(tmp_path_factory.mktemp("book"))


def test_the_contents_list_every_notebook_in_reading_order():
    toc = book.toc()
    files = [chapter["file"] for part in toc["parts"] for chapter in part["chapters"]]
    assert toc["root"] == "README"
    assert [f for f in files if f.startswith("notebooks/")] == [p.relative_to(ROOT).with_suffix("").as_posix()
                                                                for p in NOTEBOOKS]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_has_a_page_with_all_its_charts(html: Path, notebook: Path):
    page = book.page_of(html, notebook)
    assert page.is_file(), f"{notebook.name}: no page {page.relative_to(html)}"
    committed, shown = book.committed_charts(notebook), book.page_charts(page)
    assert sum(shown.values()) == sum(committed.values()), f"{notebook.name}: image count differs"
    assert shown == committed, f"{notebook.name}: the page's images are not the committed PNG charts"


def test_the_collection_has_charts_to_check():
    assert sum(sum(book.committed_charts(nb).values()) for nb in NOTEBOOKS) >= 10


def test_every_relative_link_resolves_to_a_file_of_the_build(html: Path):
    assert book.broken_links(html) == []
    assert book.problems(html) == []


def test_the_readme_is_the_landing_page_and_the_notebooks_links_to_it_work(html: Path):
    assert 'url=README.html' in (html / "index.html").read_text()
    lesson = (html / "notebooks" / "03_request_id_increments.html").read_text()
    assert 'href="../README.html"' in lesson  # the notebook's ../README.md
    readme = (html / "README.html").read_text()
    assert 'href="notebooks/00_why_retries_happen.html"' in readme
    assert 'href="notebooks/solutions/index.html"' in readme  # the README's link to the folder
    for solution in (ROOT / "notebooks" / "solutions").glob("*.ipynb"):
        assert f'href="{solution.stem}.html"' in (html / "notebooks" / "solutions" / "index.html").read_text()


def test_the_checks_fail_on_a_broken_link_a_lost_chart_and_a_lost_page(html: Path, tmp_path: Path):
    broken = shutil.copytree(html, tmp_path / "html")
    readme = broken / "README.html"
    readme.write_text(readme.read_text().replace("</body>", '<a href="notebooks/99_missing.html">x</a></body>'))
    lesson = next(nb for nb in NOTEBOOKS if book.committed_charts(nb))
    page = book.page_of(broken, lesson)
    chart = book._parse(page).output_images[0]
    (page.parent / chart).unlink()
    book.page_of(broken, NOTEBOOKS[-1]).unlink()
    found = "\n".join(book.problems(broken))
    assert "broken link README.html: notebooks/99_missing.html" in found
    assert f"{lesson.relative_to(ROOT).as_posix()}: " in found and f"broken link {page.relative_to(broken)}" in found
    assert f"{NOTEBOOKS[-1].name}: no page" in found
