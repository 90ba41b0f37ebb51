"""The examples in the helpers' docstrings run, and say what they print.

A reader who opens a helper from a notebook sees its `>>>` examples first; a wrong one teaches the wrong
thing. Every module of `helpers` is imported and its doctests run (`doctest.testmod`).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import helpers


def modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(helpers.__path__, prefix="helpers.")]
    return sorted(["helpers", *names])


def with_examples() -> list[str]:
    finder = doctest.DocTestFinder()
    return [name for name in modules() if any(t.examples for t in finder.find(importlib.import_module(name)))]


@pytest.mark.parametrize("name", with_examples())
def test_docstring_examples_hold(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (run it for details)"


def test_the_examples_are_found():
    """Six modules carry examples today; finding none would mean this file tests nothing."""
    assert len(with_examples()) >= 6
