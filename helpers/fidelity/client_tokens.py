"""DynamoDB's ClientRequestToken rules, for a backend that ignores them.

What DynamoDB (and DynamoDB Local, measured) does with a `TransactWriteItems`
call that carries a `ClientRequestToken`:

* the first **successful** call records the token for ten minutes;
* within that window, the same token with the same parameters returns
  success again and changes nothing;
* the same token with different parameters fails with
  `IdempotentParameterMismatchException`;
* a call that failed records nothing: its token may be used again;
* a token longer than 36 characters is a `ValidationException`;
* what the caller asks to have *reported* (`ReturnConsumedCapacity`,
  `ReturnItemCollectionMetrics`) is not one of the compared parameters: a
  replay may ask for capacity when the first call did not, and gets it.

`TokenLedger.answer` applies those rules in front of moto, on the virtual clock.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.awsrequest import AWSResponse
from moto.core.botocore_stubber import MockRawResponse

from ..clock import VirtualClock

WINDOW_SECONDS = 600.0
MAX_TOKEN_LENGTH = 36
REPORTING_PARAMETERS = ("ReturnConsumedCapacity", "ReturnItemCollectionMetrics")


@dataclass(frozen=True)
class _Recorded:
    fingerprint: str
    completed_at: float
    status: int
    headers: dict[str, str]
    body: bytes


def _error(url: str, code: str, message: str) -> AWSResponse:
    body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message})
    headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-ErrorType": code}
    return AWSResponse(url, 400, headers, MockRawResponse(body.encode()))


class TokenLedger:
    """Remembers successful transactions by token for `WINDOW_SECONDS` of virtual time."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self._seen: dict[str, _Recorded] = {}

    def answer(
        self,
        request: Any,
        execute: Callable[[], AWSResponse],
        replayed: Callable[[bytes], bytes] | None = None,
    ) -> AWSResponse:
        """Answer a TransactWriteItems `request`, calling `execute` only when DynamoDB would.

        `replayed`, if given, rewrites the recorded body of a replay (e.g. its ConsumedCapacity,
        which follows what the replay asked for).
        """
        params = json.loads(request.body or b"{}")
        token = params.pop("ClientRequestToken", None)
        for name in REPORTING_PARAMETERS:
            params.pop(name, None)
        if token is None:
            return execute()
        if len(token) > MAX_TOKEN_LENGTH:
            return _error(
                request.url,
                "ValidationException",
                f"Value {token} at 'clientRequestToken' failed to satisfy constraint: "
                f"Member must have length less than or equal to {MAX_TOKEN_LENGTH}",
            )
        fingerprint = json.dumps(params, sort_keys=True)
        seen = self._seen.get(token)
        if seen is not None and self.clock.now() - seen.completed_at < WINDOW_SECONDS:
            if seen.fingerprint != fingerprint:
                return _error(request.url, "IdempotentParameterMismatchException", "")
            body = replayed(seen.body) if replayed is not None else seen.body
            headers = dict(seen.headers)
            if body is not seen.body:
                headers = {h: v for h, v in headers.items() if h.lower() not in ("x-amz-crc32", "content-length")}
                headers["x-amz-crc32"] = str(zlib.crc32(body) & 0xFFFFFFFF)
            return AWSResponse(request.url, seen.status, headers, MockRawResponse(body))
        response = execute()
        if response.status_code == 200:
            self._seen[token] = _Recorded(
                fingerprint, self.clock.now(), 200, dict(response.headers), response.content
            )
        return response
