"""Claims a review found wrong stay corrected (issue 36): the lessons' prose, checked sentence by sentence.

- **MRSC.** A DynamoDB global table in multi-Region strong consistency supports neither transactions nor TTL
  (*How DynamoDB global tables work*). A notebook that names MRSC says so, and no sentence says or hopes otherwise.
- **The IETF draft.** draft-ietf-httpapi-idempotency-key-header is a work in progress that changes between
  versions (the concurrent-request rule went from MUST to SHOULD): every link to it names its version, and every
  notebook names the same one.
- **TransactionInProgressException** is DynamoDB's answer to a `TransactWriteItems` whose `ClientRequestToken` is
  still being processed, not something any write can get: every sentence that names it names the token too.
- **botocore's version** (issue 45). The lessons quote botocore's retries as the release requirements.txt pins
  (not boto3's own number): every botocore version the notebooks, helpers, tests, README and WORKSHOP name is that
  one, and every link into botocore's repository names its tag.

Every notebook and every solution is read: a claim corrected in one lesson must not survive in another.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
IDS = [str(p.relative_to(ROOT / "notebooks")) for p in NOTEBOOKS]

LINK = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")           # [text](url) -> text
BARE_URL = re.compile(r"<https?://[^>\s]*>|https?://\S+")
BLOCK_START = re.compile(r"^\s{0,3}(?:[-*+] |\d+\. |\||#)")  # a list item, a table row or a heading starts a block
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^a-z\s])")

MRSC = re.compile(r"\bMRSC\b|multi-Region strong(?:ly)? consisten", re.IGNORECASE)
NEGATION = re.compile(r"\b(?:no|not|neither|nor|none|without|cannot)\b|n't\b", re.IGNORECASE)
TRANSACTIONS = re.compile(r"transaction", re.IGNORECASE)
TTL = re.compile(r"\bTTL\b|time to live", re.IGNORECASE)
GONE = ("we found no page to say",)

DRAFT_URL = re.compile(r"https?://[^\s)>\]]*ietf\.org[^\s)>\]]*idempotency-key-header[^\s)>\]]*", re.IGNORECASE)
DRAFT_VERSION = re.compile(r"idempotency-key-header(?:-|/)(\d\d)(?:\b|/|$)", re.IGNORECASE)

IN_PROGRESS = re.compile(r"TransactionInProgress")
TOKEN = re.compile(r"ClientRequestToken|\btokens?\b", re.IGNORECASE)


def markdown(path: Path) -> list[tuple[int, str]]:
    return [(i, cell.source) for i, cell in enumerate(nbformat.read(path, as_version=4).cells)
            if cell.cell_type == "markdown"]


def plain(text: str) -> str:
    """The words a reader reads: link text kept, URLs, emphasis and code marks dropped, whitespace collapsed."""
    text = BARE_URL.sub("", LINK.sub(r"\1", text))
    return re.sub(r"\s+", " ", re.sub(r"[*_`]", "", text)).strip()


def sentences(path: Path) -> list[tuple[int, str]]:
    """(cell index, sentence) for every sentence of every markdown cell; a list item, a table row and a heading
    each start a block of their own, so a sentence never runs from one into the next."""
    found = []
    for index, source in markdown(path):
        blocks, current = [], []
        for line in source.splitlines():
            if not line.strip() or BLOCK_START.match(line):
                if current:
                    blocks.append(" ".join(current))
                current = [line.lstrip("> ")] if line.strip() else []
            else:
                current.append(line.lstrip("> "))
        if current:
            blocks.append(" ".join(current))
        for block in blocks:
            found += [(index, s) for s in SENTENCE_END.split(plain(block)) if s]
    return found


def where(path: Path, index: int, sentence: str) -> str:
    return f"{path.relative_to(ROOT)}, cell {index}: {sentence!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_notebook_that_names_mrsc_says_it_supports_no_transactions_and_no_ttl(path):
    said = sentences(path)
    mrsc = [(i, s) for i, s in said if MRSC.search(s)]
    if not mrsc:
        return
    caveated = [(i, s) for i, s in mrsc if NEGATION.search(s) and TRANSACTIONS.search(s) and TTL.search(s)]
    assert caveated, (
        f"{path.relative_to(ROOT)} names multi-Region strong consistency but never says it supports no transactions "
        "and no TTL (How DynamoDB global tables work); first mention: " + where(path, *mrsc[0]))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_sentence_gives_mrsc_transactions(path):
    wrong = [where(path, i, s) for i, s in sentences(path)
             if MRSC.search(s) and TRANSACTIONS.search(s) and not NEGATION.search(s)]
    assert not wrong, ("MRSC tables support no transactions (How DynamoDB global tables work); these sentences "
                       "speak of both without saying so:\n" + "\n".join(wrong))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_unanswered_mrsc_question_does_not_return(path):
    wrong = [where(path, i, s) for i, s in sentences(path) if any(g in s.lower() for g in GONE)]
    assert not wrong, "AWS's page answers it: MRSC supports no transactions and no TTL:\n" + "\n".join(wrong)


def draft_links(path: Path) -> list[tuple[int, str]]:
    return [(i, url) for i, source in markdown(path) for url in DRAFT_URL.findall(source)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_link_to_the_idempotency_key_draft_names_its_version(path):
    unversioned = [f"{path.relative_to(ROOT)}, cell {i}: {url}" for i, url in draft_links(path)
                   if not DRAFT_VERSION.search(url)]
    assert not unversioned, (
        "the IETF draft changes between versions (and the unversioned page shows the newest): pin the version, "
        "e.g. https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/06/\n"
        + "\n".join(unversioned))


def test_every_notebook_cites_the_same_version_of_the_draft():
    versions: dict[str, list[str]] = {}
    for path in NOTEBOOKS:
        for i, url in draft_links(path):
            if match := DRAFT_VERSION.search(url):
                versions.setdefault(match.group(1), []).append(f"{path.relative_to(ROOT)}, cell {i}: {url}")
    assert len(versions) <= 1, "the collection cites more than one version of the draft:\n" + "\n".join(
        f"-{version}: {', '.join(places)}" for version, places in sorted(versions.items()))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_transaction_in_progress_is_always_said_of_a_token(path):
    wrong = [where(path, i, s) for i, s in sentences(path) if IN_PROGRESS.search(s) and not TOKEN.search(s)]
    assert not wrong, (
        "TransactionInProgressException answers only a TransactWriteItems whose ClientRequestToken is still being "
        "processed; these sentences name it without the token:\n" + "\n".join(wrong))


# --- botocore's version (issue 45) ------------------------------------------------------------------------------
# The lessons quote and measure botocore's retries, so every botocore version they name is the one requirements.txt
# pins and the tests run: a version number near the word botocore (boto3's own, "boto3 1.44.8", excepted: the two
# share their numbering), and the tag of every link into botocore's repository. A moving branch (`develop`) is not a
# source for numbers read from the installed release.

PINNED_BOTOCORE = re.compile(r"^botocore==(\S+)\s*$", re.MULTILINE)
RELEASE = re.compile(r"(?<![\d.])1\.\d+\.\d+(?![\d.]*\d)")     # a three-part botocore/boto3 release, 1.44.18
BOTO3_BEFORE = re.compile(r"boto3\W{0,3}$", re.IGNORECASE)    # "boto3 1.44.8", "boto3==1.44.8"
BOTOCORE_LINK = re.compile(r"github\.com/boto/botocore/(?:blob|tree|raw)/([^/\s)>\]]+)")
NEAR = 200                                                     # characters either side that may name botocore
PROSE = ([ROOT / "README.md", ROOT / "WORKSHOP.md", ROOT / "CONTRIBUTING.md"]
         + sorted((ROOT / "helpers").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
         + sorted((ROOT / "tools").glob("*.py")))
TEXTS = NOTEBOOKS + PROSE
TEXT_IDS = [str(p.relative_to(ROOT)) for p in TEXTS]


def pinned_botocore() -> str:
    found = PINNED_BOTOCORE.findall((ROOT / "requirements.txt").read_text())
    assert len(found) == 1, "requirements.txt pins botocore once (botocore==X.Y.Z)"
    return found[0]


def text_of(path: Path) -> str:
    """What a reader reads of a file: a notebook's cells' sources (not its outputs), any other file whole."""
    if path.suffix == ".ipynb":
        return "\n\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells)
    return path.read_text()


def test_the_installed_botocore_is_the_pinned_one():
    import botocore
    assert botocore.__version__ == pinned_botocore()


@pytest.mark.parametrize("path", TEXTS, ids=TEXT_IDS)
def test_every_botocore_version_named_is_the_pinned_one(path):
    pin, text, wrong = pinned_botocore(), text_of(path), []
    for match in RELEASE.finditer(text):
        start, end = match.span()
        if (match.group() != pin and "botocore" in text[max(0, start - NEAR):end + NEAR].lower()
                and not BOTO3_BEFORE.search(text[max(0, start - 8):start])):
            wrong.append(f"{match.group()} in {text[max(0, start - 60):end + 20]!r}")
    for match in BOTOCORE_LINK.finditer(text):
        if match.group(1) != pin:
            wrong.append(f"a link at {match.group(1)!r}: {match.group()}")
    assert not wrong, (f"requirements.txt pins botocore {pin}; {path.relative_to(ROOT)} names another version "
                       "(say the pinned one, and link its tag):\n" + "\n".join(wrong))


# --- the specification's properties (issue 45): five, wherever they are listed ----------------------------------

PROPERTY_LIST = ("**once**", "**bound to its payload**", "**truthful**", "**live**", "**useful**")


def _markdown(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text(encoding="utf-8")
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path", [*NOTEBOOKS, ROOT / "README.md"], ids=[*IDS, "README.md"])
def test_every_list_of_the_properties_names_all_five(path):
    """A text that lists the properties as the specification does (bold, one a line) lists all five: 09 and 11
    listed four where the checker holds five (issue 45)."""
    text = _markdown(path)
    assert "four properties" not in text.lower(), path.name
    if "**live**" in text:
        missing = [name for name in PROPERTY_LIST if name not in text]
        assert not missing, f"{path.name} lists the properties without {', '.join(missing)}"
