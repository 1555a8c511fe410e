"""Failure classification and the retry timing, in our own terms."""

from __future__ import annotations

import random
import socket

import pytest

from kimi_cli.llm.failures import (
    ConnectFailure,
    EmptyStream,
    HTTPFailure,
    StreamIncomplete,
    classify,
    connect_failure,
    short,
)
from kimi_cli.llm.retry import MAX_RETRY_AFTER, backoff_delay, parse_retry_after


@pytest.mark.parametrize(
    ("exc", "kind", "retryable"),
    [
        (HTTPFailure(401, "bad key"), "auth", False),
        (HTTPFailure(403, "forbidden"), "auth", False),
        (HTTPFailure(404, "no such model"), "not_found", False),
        (HTTPFailure(429, "engine overloaded", "3"), "transient", True),
        (HTTPFailure(503, "unavailable"), "transient", True),
        (HTTPFailure(408, "timeout"), "transient", True),
        (HTTPFailure(400, "This model's maximum context length is 8192 tokens"), "overflow", False),
        (HTTPFailure(413, "prompt is too long"), "overflow", False),
        (HTTPFailure(400, "unknown field tool_choice"), "bad_request", False),
        (StreamIncomplete("cut"), "transient", True),
        (EmptyStream("nothing"), "empty", True),
        (ConnectFailure("dns", "no such host"), "dns", False),
        (ConnectFailure("refused", "refused"), "refused", True),
        (ConnectFailure("timeout", "slow"), "transient", True),
        (ConnectFailure("reset", "reset"), "transient", True),
        (ValueError("what"), "other", False),
    ],
)
def test_each_failure_gets_its_kind_and_whether_a_retry_can_help(exc: Exception, kind: str, retryable: bool) -> None:
    failure = classify(exc)
    assert (failure.kind, failure.retryable) == (kind, retryable)


def test_a_429_keeps_the_servers_retry_after() -> None:
    assert classify(HTTPFailure(429, "slow down", "7")).retry_after == "7"


def test_connection_errors_are_named_by_their_cause_chain_or_their_words() -> None:
    def chained(inner: BaseException) -> Exception:
        try:
            try:
                raise inner
            except BaseException as exc:
                raise RuntimeError("wrapped") from exc
        except RuntimeError as outer:
            return outer

    assert connect_failure(chained(socket.gaierror("nope"))).kind == "dns"
    assert connect_failure(chained(ConnectionRefusedError("no"))).kind == "refused"
    assert connect_failure(OSError("[Errno -2] Name or service not known")).kind == "dns"
    assert connect_failure(OSError("[Errno 111] Connection refused")).kind == "refused"
    assert connect_failure(OSError("network unreachable")).kind == "connect"


def test_long_messages_are_shortened_to_one_line() -> None:
    assert short("a\n  b") == "a b"
    assert len(short("x" * 1000)) == 500 and short("x" * 1000).endswith("...")


def test_retry_after_reads_seconds_and_http_dates_within_a_cap() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("-5") == 0.0
    assert parse_retry_after("99999") == MAX_RETRY_AFTER
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_backoff_grows_doubles_and_stays_between_half_and_the_cap() -> None:
    rng = random.Random(1)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (10, 8.0)]:
        delay = backoff_delay(attempt, 0.5, 8.0, rng)
        assert ceiling / 2 <= delay <= ceiling
