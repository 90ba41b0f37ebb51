"""Each lesson's declared minutes hold to the minutes model (tools/minutes.py, CONTRIBUTING.md), and the workshop's
core path fits three hours with set-up, breaks and questions even when the room is slow: at most 25 teaching
minutes a core lesson, at most 120 minutes (teaching + exercises) on the whole path, and at most 25 minutes for
each core lesson with its exercise (issue 36 for 06, issue 45 for all: a real room runs slower than any
reading-speed model)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.backend_independent  # the same on every backend: run on the moto tier only

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from minutes import exercise_reading_minutes, teaching_minutes  # noqa: E402

LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
TOLERANCE = 0.20            # a declaration more than 20% off the model is out of date
CORE_LESSON_MAX = 25        # teaching minutes of one core lesson
CORE_PATH_MAX = 120         # teaching + exercises, the whole core path: three hours less set-up, breaks and a slow room
CORE_LESSON_WITH_EXERCISE_MAX = 25   # teaching + exercise of one core lesson (06 since issue 36, all since 45)
CORE_EXERCISE = range(5, 11)


def declared(path: Path) -> dict:
    return nbformat.read(path, as_version=4).metadata.get("lesson", {})


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_declared_teaching_minutes_are_within_20_percent_of_the_model(path):
    minutes = declared(path).get("minutes", {})
    model = teaching_minutes(path)
    assert isinstance(minutes.get("teaching"), int), f"{path.name}: metadata.lesson.minutes.teaching is missing"
    assert abs(minutes["teaching"] - model) <= TOLERANCE * model, (
        f"{path.name}: declares {minutes['teaching']} teaching minutes, the model says {model:.1f}: "
        "update metadata.lesson.minutes (python tools/minutes.py), then python tools/add_navigation.py")


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_declared_exercise_minutes_cover_reading_the_exercise(path):
    minutes = declared(path).get("minutes", {})
    reading = exercise_reading_minutes(path)
    assert isinstance(minutes.get("exercises"), int), f"{path.name}: metadata.lesson.minutes.exercises is missing"
    assert minutes["exercises"] >= reading, (
        f"{path.name}: {minutes['exercises']} exercise minutes, but reading its Your turn takes {reading:.1f}")


CORE = [p for p in LESSONS if declared(p).get("path") == "core"]


@pytest.mark.parametrize("path", CORE, ids=[p.name for p in CORE])
def test_a_core_lesson_teaches_in_25_minutes_and_its_exercise_takes_5_to_10(path):
    assert teaching_minutes(path) <= CORE_LESSON_MAX, (
        f"{path.name}: {teaching_minutes(path):.1f} teaching minutes by the model; a core lesson has at most "
        f"{CORE_LESSON_MAX}: move what is not the pattern into helpers/, the tests or a deep dive")
    assert declared(path)["minutes"]["exercises"] in CORE_EXERCISE, f"{path.name}: a core exercise takes 5-10 minutes"


def with_exercise(path: Path) -> float:
    """Teaching minutes by the model, plus the exercise's declared minutes."""
    return teaching_minutes(path) + declared(path)["minutes"]["exercises"]


def test_the_core_path_fits_120_minutes_by_the_model():
    assert [p.name[:2] for p in CORE] == ["01", "02", "03", "04", "06"], "the spine CONTRIBUTING.md names"
    total = sum(with_exercise(p) for p in CORE)
    assert total <= CORE_PATH_MAX, (
        f"the core path takes {total:.1f} minutes by the model (teaching + exercises); at most {CORE_PATH_MAX}: "
        + ", ".join(f"{p.name[:2]} {with_exercise(p):.1f}" for p in CORE))


@pytest.mark.parametrize("path", CORE, ids=[p.name for p in CORE])
def test_a_core_lesson_teaches_and_exercises_in_25_minutes(path):
    """Teaching and exercise together, by the model and as declared (issue 45: 04 ran past its 21 + 7)."""
    minutes = declared(path)["minutes"]
    assert with_exercise(path) <= CORE_LESSON_WITH_EXERCISE_MAX, (
        f"{path.name}: {teaching_minutes(path):.1f} teaching minutes by the model + {minutes['exercises']} of "
        f"exercise; at most {CORE_LESSON_WITH_EXERCISE_MAX} together")
    assert minutes["teaching"] + minutes["exercises"] <= CORE_LESSON_WITH_EXERCISE_MAX, (
        f"{path.name}: declared {minutes['teaching']} + {minutes['exercises']}; at most "
        f"{CORE_LESSON_WITH_EXERCISE_MAX} together")


def test_the_declared_core_path_agrees_with_the_model_limit():
    """WORKSHOP.md's schedule is written from the declared minutes: they must fit the same 120."""
    total = sum(declared(p)["minutes"]["teaching"] + declared(p)["minutes"]["exercises"] for p in CORE)
    assert total <= CORE_PATH_MAX, f"the declared core path takes {total} minutes; at most {CORE_PATH_MAX}"


def test_every_lesson_is_on_the_core_path_or_a_deep_dive():
    paths = {p.name: declared(p).get("path") for p in LESSONS}
    assert set(paths.values()) <= {"core", "deep-dive"}, paths


def test_the_model_counts_words_and_code_lines(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · T\n\n" + "word " * 396),       # 400 words: 2 minutes
                nbformat.v4.new_code_cell("x = 1\n\n" * 15),                          # 15 lines: 1 minute
                nbformat.v4.new_markdown_cell("## Your turn\n\n" + "word " * 197),    # 200 words: the exercise's
                nbformat.v4.new_code_cell("y = 2\n" * 30),                            # 30 lines: the exercise's
                nbformat.v4.new_markdown_cell("## Sources\n\n" + "link " * 1000)]     # not counted
    path = tmp_path / "99_t.ipynb"
    nbformat.write(nb, path)
    assert teaching_minutes(path) == pytest.approx(3.0)
    assert exercise_reading_minutes(path) == pytest.approx(3.0)
