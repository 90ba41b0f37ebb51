"""Write the README's table of what each subject draws from the checker's catalogue, from the data.

    python tools/catalogue_table.py          # print the table
    python tools/catalogue_table.py --write  # write it between the README's catalogue markers

The table is `helpers.catalogue.table(helpers.subjects.KINDS)`: one row per event of `helpers.catalogue.CATALOGUE`,
one column per kind of subject, "yes" where the subject draws the event (`catalogue.drawn_by`), else "no" and the
reason its class gives (`why_not`). tests/test_catalogue_table.py fails when the README's table and the data differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

BEGIN = "<!-- catalogue:begin (written by tools/catalogue_table.py --write from helpers/catalogue.py) -->"
END = "<!-- catalogue:end -->"
README = ROOT / "README.md"


def rendered() -> str:
    from helpers.catalogue import table
    from helpers.subjects import KINDS

    return table(KINDS)


def in_readme(text: str) -> str | None:
    """The table between the markers in `text` (None: no markers)."""
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def write() -> None:
    text = README.read_text()
    if in_readme(text) is None:
        raise SystemExit(f"README.md has no {BEGIN!r} ... {END!r} markers")
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    README.write_text(f"{before}{BEGIN}\n{rendered()}\n{END}{after}")


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        write()
    else:
        print(rendered())
