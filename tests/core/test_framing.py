"""LineBuffer: NDJSON framing, sans-IO (no event loop)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp._core.framing import DEFAULT_MAX_LINE_BYTES, LineBuffer, LineTooLong


def feed_all(buf: LineBuffer, chunks: list[bytes]) -> list[bytes | LineTooLong]:
    out: list[bytes | LineTooLong] = []
    for chunk in chunks:
        out.extend(buf.feed(chunk))
    return out


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def expected_frames(lines: list[bytes], limit: int) -> list[bytes | LineTooLong]:
    """The reference model of Rule 1 and Rule 2."""
    out: list[bytes | LineTooLong] = []
    for line in lines:
        content = line[:-1] if line.endswith(b"\r") else line
        if len(content) > limit:
            out.append(LineTooLong(limit))
        elif content.strip():
            out.append(content)
    return out


# -- table-driven basics ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        pytest.param([b'{"a":1}\n'], [b'{"a":1}'], id="one-line"),
        pytest.param([b"a\nb\nc\n"], [b"a", b"b", b"c"], id="three-in-one-chunk"),
        pytest.param([b"ab", b"c\n"], [b"abc"], id="split-in-two"),
        pytest.param([b"a", b"b", b"c", b"\n"], [b"abc"], id="byte-by-byte"),
        pytest.param([b"abc"], [], id="no-newline-yet"),
        pytest.param([b"abc\r\n"], [b"abc"], id="crlf"),
        pytest.param([b"abc\r", b"\n"], [b"abc"], id="crlf-split-between-cr-and-lf"),
        pytest.param([b"a\r\r\n"], [b"a\r"], id="only-one-cr-dropped"),
        pytest.param([b"a\rb\n"], [b"a\rb"], id="inner-cr-kept"),
        pytest.param([b"\n\n\n"], [], id="blank-lines-skipped"),
        pytest.param([b"\r\n\r\n"], [], id="blank-crlf-lines-skipped"),
        pytest.param([b"  \t \n"], [], id="whitespace-only-line-skipped"),
        pytest.param([b"\na\n\nb\n"], [b"a", b"b"], id="blank-lines-between"),
        pytest.param([b" a \n"], [b" a "], id="inner-spaces-kept"),
        pytest.param([b"", b"a\n", b""], [b"a"], id="empty-chunks"),
        pytest.param([b"a\nb"], [b"a"], id="partial-tail-held"),
    ],
)
def test_feed(chunks: list[bytes], expected: list[bytes]) -> None:
    assert feed_all(LineBuffer(), chunks) == expected


def test_lines_are_bytes() -> None:
    (line,) = LineBuffer().feed(b"abc\n")
    assert type(line) is bytes


def test_partial_line_completes_later() -> None:
    buf = LineBuffer()
    assert buf.feed(b"a\nbc") == [b"a"]
    assert buf.pending == 2
    assert buf.feed(b"d\n") == [b"bcd"]
    assert buf.pending == 0


def test_default_limit_is_16_mib() -> None:
    assert DEFAULT_MAX_LINE_BYTES == 16 * 1024 * 1024
    assert LineBuffer().max_line_bytes == DEFAULT_MAX_LINE_BYTES


@pytest.mark.parametrize("limit", [0, -1])
def test_limit_must_be_positive(limit: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        LineBuffer(limit)


# -- over-long lines ----------------------------------------------------------------------------

LIMIT = 10


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        pytest.param([b"x" * 10 + b"\nok\n"], [b"x" * 10, b"ok"], id="exactly-at-limit"),
        pytest.param([b"x" * 10 + b"\r\nok\n"], [b"x" * 10, b"ok"], id="at-limit-with-crlf"),
        pytest.param(
            [b"x" * 5, b"x" * 5, b"\r", b"\n", b"ok\n"],
            [b"x" * 10, b"ok"],
            id="at-limit-crlf-in-pieces",
        ),
        pytest.param(
            [b"x" * 11 + b"\nok\n"], [LineTooLong(LIMIT), b"ok"], id="one-over-in-one-chunk"
        ),
        pytest.param(
            [b"x" * 11, b"\n", b"ok\n"], [LineTooLong(LIMIT), b"ok"], id="one-over-newline-later"
        ),
        pytest.param(
            [b"x" * 11 + b"\r\nok\n"], [LineTooLong(LIMIT), b"ok"], id="one-over-with-crlf"
        ),
        pytest.param(
            [b"x" * 100 + b"\nok\n"], [LineTooLong(LIMIT), b"ok"], id="far-over-in-one-chunk"
        ),
        pytest.param(
            [b"x" * 7] * 30 + [b"\nok\n"], [LineTooLong(LIMIT), b"ok"], id="over-many-chunks"
        ),
        pytest.param(
            [b"x"] * 50 + [b"\n", b"o", b"k", b"\n"],
            [LineTooLong(LIMIT), b"ok"],
            id="over-byte-by-byte",
        ),
        pytest.param(
            [b"a\n" + b"x" * 30, b"x" * 30 + b"\nb\n"],
            [b"a", LineTooLong(LIMIT), b"b"],
            id="good-long-good",
        ),
        pytest.param(
            [b"x" * 20 + b"\n" + b"y" * 20 + b"\nok\n"],
            [LineTooLong(LIMIT), LineTooLong(LIMIT), b"ok"],
            id="two-long-lines-two-events",
        ),
        pytest.param(
            [b"x" * 20, b"\n" + b"y" * 20, b"\nok\n"],
            [LineTooLong(LIMIT), LineTooLong(LIMIT), b"ok"],
            id="two-long-lines-across-chunks",
        ),
        pytest.param([b"x" * 30, b"\n"], [LineTooLong(LIMIT)], id="long-then-newline-only"),
    ],
)
def test_long_lines(chunks: list[bytes], expected: list[bytes | LineTooLong]) -> None:
    assert feed_all(LineBuffer(LIMIT), chunks) == expected


def test_long_line_reported_once_as_soon_as_it_overflows() -> None:
    buf = LineBuffer(LIMIT)
    assert buf.feed(b"x" * (LIMIT + 1)) == []  # might still end in b"\r\n"
    assert buf.feed(b"x") == [LineTooLong(LIMIT)]
    for _ in range(100):
        assert buf.feed(b"x" * 50) == []
    assert buf.feed(b"tail\nnext\n") == [b"next"]


def test_line_too_long_carries_the_limit() -> None:
    (event,) = LineBuffer(3).feed(b"abcd\n")
    assert event == LineTooLong(3)
    assert event.limit == 3


def test_memory_bounded_while_discarding() -> None:
    buf = LineBuffer(LIMIT)
    for size in (1, 3, 11, 12, 64, 1000):
        buf.feed(b"z" * size)
        assert buf.pending <= LIMIT + 1


# -- properties -----------------------------------------------------------------------------------

line_bytes = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))
mixed_lines = st.lists(
    st.one_of(
        line_bytes,
        st.sampled_from([b"", b"\r", b"  ", b"x" * 16, b"x" * 16 + b"\r", b"x" * 17]),
    ),
    max_size=20,
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(line_bytes, max_size=20), cuts=st.lists(st.integers(0, 10_000), max_size=30))
def test_any_chunking_gives_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    out = feed_all(LineBuffer(), split_at(data, cuts))
    assert out == expected_frames(lines, DEFAULT_MAX_LINE_BYTES)


@settings(max_examples=300, deadline=None)
@given(
    lines=mixed_lines,
    cuts=st.lists(st.integers(0, 10_000), max_size=40),
    limit=st.integers(1, 16),
)
def test_any_chunking_with_long_lines_matches_the_model(
    lines: list[bytes], cuts: list[int], limit: int
) -> None:
    data = b"".join(line + b"\n" for line in lines)
    buf = LineBuffer(limit)
    out: list[bytes | LineTooLong] = []
    for chunk in split_at(data, cuts):
        out.extend(buf.feed(chunk))
        assert buf.pending <= limit + 1
    assert out == expected_frames(lines, limit)
    assert buf.pending == 0


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=64), max_size=30), limit=st.integers(1, 32))
def test_pending_never_exceeds_limit_plus_one(chunks: list[bytes], limit: int) -> None:
    buf = LineBuffer(limit)
    for chunk in chunks:
        buf.feed(chunk)
        assert buf.pending <= limit + 1
