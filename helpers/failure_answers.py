"""Kept for notebooks (08) and helpers/exercises/lesson_08.py; the home is `helpers.wire` and `helpers.dynamodb_errors`.

`watch_answers(target, clock)` and `Answer` (each write's answer on the wire) live in `helpers/wire.py`;
`answer_of(error)` and `botocore_resends(code, status)` (what an answer means) in `helpers/dynamodb_errors.py`.
"""

from __future__ import annotations

from .dynamodb_errors import answer_of, botocore_resends
from .wire import Answer, AnswerLog, watch_answers

__all__ = ["Answer", "AnswerLog", "answer_of", "botocore_resends", "watch_answers"]
