"""Load another notebook's own code -- its `imports` and `lesson` cells -- into a namespace.

Notebook 10 runs notebook 06's DynamoDB handler beside its Postgres one. It does not copy
06's code: it reads 06's cells from the .ipynb when it runs, so what runs is exactly what 06
teaches today (and a fix made in 06 shows up here too).

    lesson_06 = load_lesson("06_saved_responses.ipynb")
    lesson_06["pay"]            # 06's handler, working on 06's tables in this kernel's backend

`swapped(lesson_06, end_lease=give_back)` puts a function in place of one of the loaded lesson's own for
the length of a `with` block, and puts the lesson's back however the block ends: the loaded handler calls
the variant inside (its functions look their names up in that namespace).

`call_with(function, **arguments)` calls a loaded function by its parameter names, so a
caller does not depend on their order (06 may take a caller scope or not).

This is the collection's one notebook loader: the tests run a notebook's own functions through
`run_cells` too (tests/notebook_code.py), and so does tools/bench.py.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TAGS = ("imports", "lesson")
DISPLAY_OPTIONS = ("display.width", "display.max_columns", "display.max_colwidth", "display.max_rows")


class LessonNotFound(FileNotFoundError):
    """No such notebook, or it has no cells tagged `imports` / `lesson`."""


def lesson_cells(notebook: str, tag: str) -> list[str]:
    """The source of `notebook`'s code cells tagged `tag`, in order (`notebook` relative to notebooks/)."""
    if not isinstance(notebook, str) or not notebook.endswith(".ipynb") or not (NOTEBOOKS / notebook).is_file():
        raise LessonNotFound(f"no notebook {notebook!r} in notebooks/")
    # The file's JSON, read as it is (nbformat's reader would cost a second's imports in every kernel).
    cells = json.loads((NOTEBOOKS / notebook).read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells
               if c["cell_type"] == "code" and tag in c.get("metadata", {}).get("tags", [])]
    return SOURCE_HOOK(notebook, tag, sources) if SOURCE_HOOK else sources


# The mutation run (tools/mutants.py) sets this, in its own pytest processes only, to change one cell's source as
# the tests load it; it is None everywhere else, and the cells are the notebook's as saved.
SOURCE_HOOK: Callable[[str, str, list[str]], list[str]] | None = None


@contextlib.contextmanager
def display_settings_kept() -> Iterator[None]:
    """Restore pandas' display options and matplotlib's rcParams as they were on entry."""
    options = {name: pd.get_option(name) for name in DISPLAY_OPTIONS}
    try:
        with matplotlib.rc_context():
            yield
    finally:
        for name, value in options.items():
            pd.set_option(name, value)


def run_cells(notebook: str, globals_: dict[str, Any], *, name: str | None = None,
              into: dict[str, Any] | None = None) -> dict[str, Any]:
    """`notebook`'s namespace after its `imports` cells, then `globals_`, then its `lesson` cells (as they print).

    `into`: run them in that namespace instead of a new one."""
    namespace: dict[str, Any] = {"__name__": name or f"lesson:{notebook}"} if into is None else into
    imports, lessons = lesson_cells(notebook, "imports"), lesson_cells(notebook, "lesson")
    for source in imports:
        exec(compile(source, f"{notebook}[imports]", "exec"), namespace)
    namespace.update(globals_)
    for source in lessons:
        exec(compile(source, f"{notebook}[lesson]", "exec"), namespace)
    return namespace


def load_lesson(notebook: str, into: dict[str, Any] | None = None, **globals_: Any) -> dict[str, Any]:
    """`notebook`'s namespace after running its `imports` cells, then `globals_`, then its `lesson` cells.

    `into=globals()` runs them in the calling notebook's own namespace instead (a deep dive that
    continues a lesson): the lesson's functions and the caller's code then share one set of names,
    so a provider or a function the caller replaces is the one the lesson's handler uses.

    Anything those cells print is swallowed: the loading notebook prints what it means to. The
    loaded notebook's display settings (its `helpers.setup()`, its pandas options, matplotlib's
    rcParams) are undone afterwards, so the loading notebook's tables keep the width it chose.
    """
    if not lesson_cells(notebook, "lesson"):
        raise LessonNotFound(f"{notebook} has no cells tagged 'lesson'")
    with contextlib.redirect_stdout(io.StringIO()), display_settings_kept():
        return run_cells(notebook, globals_, into=into)


@contextlib.contextmanager
def swapped(namespace: dict[str, Any], **replacements: Any) -> Iterator[dict[str, Any]]:
    """Inside the block, `namespace[name]` is `replacements[name]`; afterwards the originals are back.

    Raises KeyError naming a name the namespace does not have (a typo would otherwise swap nothing).
    """
    missing = sorted(set(replacements) - set(namespace))
    if missing:
        raise KeyError(f"the lesson has no {', '.join(missing)} to swap")
    originals = {name: namespace[name] for name in replacements}
    namespace.update(replacements)
    try:
        yield namespace
    finally:
        namespace.update(originals)


ALIASES = {
    "user_id": ("user_id", "user", "caller", "account", "scope", "tenant"),
    "key": ("key", "idempotency_key"),
}


def call_with(function: Callable[..., Any], **arguments: Any) -> Any:
    """Call `function` with the `arguments` its signature names (by name or by a known alias).

    An argument the function does not take is left out; a parameter it needs that none of the
    arguments fills raises TypeError naming it.
    """
    bound: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        given = next((a for a, aliases in ALIASES.items() if name in aliases and a in arguments), None)
        given = given or (name if name in arguments else None)
        if given is not None:
            bound[name] = arguments[given]
        elif parameter.default is parameter.empty:
            raise TypeError(f"{function.__name__}() needs {name!r}, which the caller does not give")
    return function(**bound)
