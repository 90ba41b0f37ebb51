"""Shared fixtures: the backend under test (RETRY_BACKEND), fresh tables, notebook code."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import settings

import helpers

# Property-based tests: derandomized, so a CI run is reproducible; `HYPOTHESIS_PROFILE=explore` searches afresh.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_names = itertools.count()


@pytest.fixture(scope="session")
def db() -> helpers.backends.Backend:
    return helpers.connect()


@pytest.fixture
def fresh(db):
    """Make an empty table with a name unique to this test run: ``fresh(sdk_retries=True)``."""

    def make(**options):
        return helpers.fresh_table(db, f"test-{os.getpid()}-{next(_names)}", **options)

    return make


@pytest.fixture
def table(fresh):
    return fresh()
