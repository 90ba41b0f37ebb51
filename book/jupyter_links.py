"""A Sphinx extension for the book: the collection's links work in it as they do in JupyterLab and on GitHub.

Two kinds of link the notebooks and the README use would otherwise break in the built site:

- A heading anchor written the way JupyterLab makes them, `[Time in items](#Time-in-items)`: the heading's text
  with spaces turned into hyphens, case kept. MyST makes GitHub-style slugs (`#time-in-items`); each heading
  here answers to both.
- A link to a folder, `[notebooks/solutions/](notebooks/solutions/)`: GitHub lists the folder. The book gets an
  index page for each folder that holds pages (`notebooks/solutions/index.html`, listing them in order), and the
  link points at it.

book/_config.yml loads it (`sphinx.local_extensions`); tools/book.py builds the book.
"""

from __future__ import annotations

import html
from pathlib import Path, PurePosixPath
from typing import Any

from docutils import nodes
from docutils.transforms import Transform
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform


class JupyterAnchors(Transform):
    """Give every heading slug MyST records a JupyterLab-style alias (text, spaces -> '-', case kept)."""

    default_priority = 870  # before MyST resolves `[x](#id)` links (879)

    def apply(self, **kwargs: Any) -> None:
        slugs: dict[str, tuple[int, str, str]] = getattr(self.document, "myst_slugs", {})
        for entry in list(slugs.values()):
            slugs.setdefault(entry[2].replace(" ", "-"), entry)  # the same dict MyST keeps in env.metadata


def folders_with_pages(app: Sphinx) -> dict[str, list[str]]:
    """Each folder below the book's root that holds pages -> its pages' docnames, in table-of-contents order."""
    order = {name: i for i, name in enumerate(app.env.toctree_includes.get(app.config.root_doc, []))}
    folders: dict[str, list[str]] = {}
    for docname in app.env.found_docs:
        parent = str(PurePosixPath(docname).parent)
        if parent != ".":
            folders.setdefault(parent, []).append(docname)
    return {folder: sorted(docs, key=lambda d: (order.get(d, len(order)), d)) for folder, docs in folders.items()}


class FolderLinks(SphinxPostTransform):
    """Point a MyST link at a folder of pages to that folder's generated index page."""

    default_priority = 8  # before MyST's own resolver (9) would warn that the target is not a document
    builders = ("html",)

    def run(self, **kwargs: Any) -> None:
        folders = folders_with_pages(self.app)
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") != "myst" or node.get("refdomain") == "doc":
                continue
            refdoc = node.get("refdoc", self.env.docname)
            target = PurePosixPath(refdoc).parent / node["reftarget"]
            folder = Path(self.app.srcdir, target)
            name = str(PurePosixPath(*target.parts)) if target.parts else "."
            if folder.is_dir() and name in folders:
                uri = self.app.builder.get_relative_uri(refdoc, f"{name}/index")
                reference = nodes.reference("", "", internal=True, refuri=uri)
                reference += node[0].deepcopy()
                node.replace_self(reference)


def folder_pages(app: Sphinx):
    """The index page of each folder of pages (for the html builder's `html-collect-pages`)."""
    for folder, docs in folders_with_pages(app).items():
        here = f"{folder}/index"
        items = "".join(f'<li><a href="{app.builder.get_relative_uri(here, doc)}">'
                        f"{html.escape(app.env.titles[doc].astext())}</a></li>" for doc in docs)
        body = f"<h1>{html.escape(folder)}/</h1>\n<ul>{items}</ul>\n"
        yield here, {"title": f"{folder}/", "body": body}, "page.html"


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(JupyterAnchors)
    app.add_post_transform(FolderLinks)
    app.connect("html-collect-pages", folder_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
