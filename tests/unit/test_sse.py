"""The SSE decoder against the standard's rules, and chunks from events."""

from __future__ import annotations

import pytest

from kimi_cli.llm.failures import HTTPFailure, StreamIncomplete
from kimi_cli.llm.sse import ServerSentEvent, SSEDecoder, chunk_from_event


def decode(*pieces: str) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [event for piece in pieces for event in decoder.feed(piece)]
    return events + decoder.close()


def test_a_single_data_line_is_one_event() -> None:
    assert decode('data: {"a":1}\n\n') == [ServerSentEvent('{"a":1}')]


def test_data_lines_of_one_event_are_joined_with_newlines() -> None:
    assert [e.data for e in decode("data: first\ndata: second\ndata:third\n\n")] == ["first\nsecond\nthird"]


def test_only_one_space_after_the_colon_is_dropped() -> None:
    assert [e.data for e in decode("data:  two spaces\n\n")] == [" two spaces"]


def test_comments_are_ignored_and_a_comment_only_block_dispatches_nothing() -> None:
    assert [e.data for e in decode(": keep-alive\n\n: another\ndata: x\n: inside\n\n")] == ["x"]


def test_event_and_id_fields_are_read_and_never_taken_for_data() -> None:
    events = decode("event: delta\nid: 7\ndata: x\n\ndata: y\n\n")
    assert [(e.event, e.id, e.data) for e in events] == [("delta", "7", "x"), ("message", "7", "y")]


def test_an_id_with_a_nul_is_ignored() -> None:
    assert decode("id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n")[1].id == "1"


def test_retry_sets_the_reconnection_time_only_when_it_is_digits() -> None:
    decoder = SSEDecoder()
    decoder.feed("retry: 1500\n\nretry: soon\ndata: x\n\n")
    assert decoder.retry == 1500


def test_crlf_and_cr_line_ends_work_like_lf() -> None:
    assert [e.data for e in decode("data: a\r\ndata: b\r\n\r\n")] == ["a\nb"]
    assert [e.data for e in decode("data: a\rdata: b\r\r")] == ["a\nb"]


def test_a_crlf_split_between_two_reads_is_one_line_end() -> None:
    assert [e.data for e in decode("data: a\r", "\ndata: b\r", "\n\r", "\n")] == ["a\nb"]


def test_lines_split_anywhere_between_reads_are_put_back_together() -> None:
    stream = 'data: {"choices": [1]}\n\ndata: [DONE]\n\n'
    pieces = [stream[i : i + 3] for i in range(0, len(stream), 3)]
    assert [e.data for e in decode(*pieces)] == ['{"choices": [1]}', "[DONE]"]


def test_a_final_event_without_a_blank_line_is_still_delivered() -> None:
    assert [e.data for e in decode("data: a\n\ndata: last")] == ["a", "last"]
    assert [e.data for e in decode("data: last\n")] == ["last"]


def test_a_field_without_a_colon_is_a_name_with_an_empty_value() -> None:
    assert [e.data for e in decode("data\ndata\n\n")] == ["\n"]


def test_a_leading_byte_order_mark_is_dropped() -> None:
    assert decode("\ufeffdata: x\n\n")[0].data == "x"


def test_done_and_empty_data_give_no_chunk() -> None:
    assert chunk_from_event(ServerSentEvent("[DONE]")) is None
    assert chunk_from_event(ServerSentEvent("  ")) is None


def test_a_chunk_is_a_json_object() -> None:
    assert chunk_from_event(ServerSentEvent('{"choices": []}')) == {"choices": []}
    with pytest.raises(StreamIncomplete, match="not JSON"):
        chunk_from_event(ServerSentEvent("{oops"))
    with pytest.raises(StreamIncomplete, match="not a JSON object"):
        chunk_from_event(ServerSentEvent("[1]"))


def test_an_error_in_the_stream_raises_with_the_servers_status_and_words() -> None:
    with pytest.raises(HTTPFailure) as caught:
        chunk_from_event(ServerSentEvent('{"error": {"message": "overloaded", "code": 429}}'))
    assert (caught.value.status, caught.value.message) == (429, "overloaded")
    with pytest.raises(HTTPFailure) as caught:
        chunk_from_event(ServerSentEvent('{"error": "plain"}'))
    assert (caught.value.status, caught.value.message) == (500, "plain")


def test_an_event_named_error_is_a_failure_even_with_a_plain_text_body() -> None:
    with pytest.raises(HTTPFailure, match="engine died"):
        chunk_from_event(ServerSentEvent("engine died", event="error"))
    with pytest.raises(HTTPFailure, match="bad"):
        chunk_from_event(ServerSentEvent('{"message": "bad"}', event="error"))


def test_a_long_line_in_many_reads_is_one_line_and_an_endless_one_is_refused() -> None:
    """An endless `data:` line with no line end was joined and rescanned on every read (quadratic CPU, memory
    without a bound): now the pieces wait until their line ends, and a line or an event past the cap ends the
    stream with StreamIncomplete (the request's retry policy then decides)."""
    from kimi_cli.llm.sse import MAX_EVENT_CHARS

    decoder = SSEDecoder()
    assert decoder.feed("data: ") == []
    for _ in range(1000):
        assert decoder.feed("x" * 1000) == []
    [event] = decoder.feed("\n\n")
    assert event.data == "x" * 1_000_000
    endless = SSEDecoder()
    piece = "y" * (1024 * 1024)
    with pytest.raises(StreamIncomplete, match="line is longer"):
        for _ in range(MAX_EVENT_CHARS // len(piece) + 2):
            endless.feed(piece)
    many = SSEDecoder()
    with pytest.raises(StreamIncomplete, match="event is longer"):
        for _ in range(MAX_EVENT_CHARS // len(piece) + 2):
            many.feed("data: " + piece + "\n")  # lines that end, in one event that never does
