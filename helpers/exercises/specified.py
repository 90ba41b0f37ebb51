"""The specification's checker inside an exercise: the reader's answer held to `helpers/specification.py`.

An exercise's scenario checks replay the stories their author wrote, each with a specific hint. An exercise
checker also sends the reader's function -- wired into the lesson's own handler, or made a handler of its own --
the generated histories of `helpers/checker.py` (crashes, duplicates, lost answers, DynamoDB's failure answers,
the provider down) after its scenarios pass. `broken()` turns the checker's verdict into the exercise's
counterexample: the property, how it broke, and the shortest history found, in lines of at most 100 characters.
"""

from __future__ import annotations

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
