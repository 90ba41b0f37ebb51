"""The specification's checker inside an exercise: the reader's answer held to `helpers/specification.py`.

An exercise's scenario checks replay the stories their author wrote, each with a specific hint. An exercise
checker also sends the reader's function -- wired into the lesson's own handler, or made a handler of its own --
the generated histories of `helpers/checker.py` (crashes, duplicates, lost answers, DynamoDB's failure answers,
the provider down) after its scenarios pass. `broken()` turns the checker's verdict into the exercise's
counterexample: the property, how it broke, and the shortest history found, in lines of at most 100 characters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .verdict import Counterexample

SPECIFICATION = "helpers/specification.py"


def broken(verdict: Any) -> None:
    """Raise `Counterexample` if the `helpers.checker.Verdict` names a broken property."""
    if verdict.broken is not None:
        raise Counterexample(f"held to the specification ({SPECIFICATION}) over generated histories:\n{verdict}")


def held(verdict: Any) -> str:
    """The PASS line's words for a verdict that held."""
    untried = f" ({', '.join(verdict.untried)}: not tried)" if verdict.untried else ""
    return f"held to the specification over {verdict.histories} histories{untried}"


_LOADED: dict[str, dict[str, Any]] = {}


def namespace_of(function: Callable[..., Any], notebook: str, needs: Iterable[str]) -> dict[str, Any]:
    """The lesson's namespace for the reader's `function`: its own module globals if they hold every name in `needs`
    (it was written in the lesson's notebook), else the lesson's cells of `notebook` loaded here, once per process."""
    g = getattr(function, "__globals__", {})
    if all(name in g for name in needs):
        return g
    if notebook not in _LOADED:
        from ..lessons import load_lesson
        _LOADED[notebook] = load_lesson(notebook)
    return _LOADED[notebook]
