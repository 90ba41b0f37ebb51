"""Run Powertools for AWS Lambda's idempotency utility on the virtual clock.

Powertools reads the wall clock itself: every module of its idempotency
utility does ``import datetime as dt`` and calls ``dt.datetime.now()`` to
stamp a record's expiry, its in-progress expiry, and to decide whether a
record it reads has expired. (Checked on aws-lambda-powertools 3.37.0.)

`use_virtual_time(clock)` (the collection's one verb for "run this on the virtual
clock": fidelity/sqs_clock.py has the same)
swaps that one name, ``dt``, in exactly those modules for a stand-in whose
``datetime.now()`` reads `clock`; everything else (``timedelta``, ``fromtimestamp``)
is the real `datetime`. Nothing else in the process sees a different time, and
leaving the ``with`` block restores it.

Powertools also asks the Lambda context how long the invocation has left,
to set the in-progress lease. `LambdaContext` answers from the same clock.
"""

from __future__ import annotations

import datetime as _real_dt
import importlib
import threading
import types

from ..clock import VirtualClock
from ..validation import BadInput

POWERTOOLS_MODULES = (
    "aws_lambda_powertools.utilities.idempotency.base",
    "aws_lambda_powertools.utilities.idempotency.persistence.base",
    "aws_lambda_powertools.utilities.idempotency.persistence.dynamodb",
    "aws_lambda_powertools.utilities.idempotency.persistence.datarecord",
)

_lock = threading.Lock()


def _datetime_module_on(clock: VirtualClock) -> types.ModuleType:
    class VirtualDatetime(_real_dt.datetime):
        @classmethod
        def now(cls, tz: _real_dt.tzinfo | None = None) -> _real_dt.datetime:  # type: ignore[override]
            return _real_dt.datetime.fromtimestamp(clock.now(), tz)

    stand_in = types.ModuleType("datetime_on_virtual_clock")
    stand_in.__dict__.update({k: v for k, v in vars(_real_dt).items() if not k.startswith("__")})
    stand_in.datetime = VirtualDatetime  # type: ignore[attr-defined]
    return stand_in


_installed: dict[str, object] = {"clock": None, "depth": 0, "saved": None}


class OnVirtualTime:
    """Powertools on a virtual clock from the call on; `undo()` (or the end of a ``with`` block) ends it."""

    def __init__(self, clock: VirtualClock) -> None:
        if not isinstance(clock, VirtualClock):
            raise BadInput(f"use_virtual_time needs a VirtualClock, got {type(clock).__name__}")
        self._modules = [importlib.import_module(name) for name in POWERTOOLS_MODULES]
        with _lock:
            if _installed["depth"] == 0:
                for module in self._modules:
                    if getattr(module, "dt", None) is not _real_dt:
                        raise RuntimeError(f"{module.__name__} no longer uses `import datetime as dt`; "
                                           "re-check the patch")
                stand_in = _datetime_module_on(clock)
                for module in self._modules:
                    module.dt = stand_in  # type: ignore[attr-defined]
                _installed["clock"] = clock
            elif _installed["clock"] is not clock:
                raise RuntimeError("Powertools already runs on another virtual clock")
            _installed["depth"] += 1  # type: ignore[operator]
        self._on = True

    def undo(self) -> None:
        """End this use; the real `datetime` comes back when the last one ends."""
        with _lock:
            if not self._on:
                return
            self._on = False
            _installed["depth"] -= 1  # type: ignore[operator]
            if _installed["depth"] == 0:
                for module in self._modules:
                    module.dt = _real_dt  # type: ignore[attr-defined]
                _installed["clock"] = None

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        self.undo()


def use_virtual_time(clock: VirtualClock) -> OnVirtualTime:
    """From this call, Powertools' idempotency utility reads `clock` instead of the wall clock.

    ``with use_virtual_time(clock):`` ends it with the block (or call `.undo()`). Uses may nest and
    may run in several threads at once (all on the same clock); the real `datetime` comes back when
    the last one ends.
    """
    return OnVirtualTime(clock)



class LambdaContext:
    """The part of a Lambda context Powertools uses: the time left, on the virtual clock."""

    function_name = "pay"
    memory_limit_in_mb = 128
    aws_request_id = "virtual"

    def __init__(self, clock: VirtualClock, timeout_seconds: float) -> None:
        if not timeout_seconds > 0:
            raise BadInput(f"timeout_seconds must be positive, got {timeout_seconds!r}")
        self._clock = clock
        self._deadline = clock.now() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds until the invocation's deadline (0 once it has passed)."""
        return max(0, int((self._deadline - self._clock.now()) * 1000))
