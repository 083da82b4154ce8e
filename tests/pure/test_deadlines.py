"""Deadline math: deadlines from the Flow option, whole-second Timers rounded up, lateness from the
deadline on, and the ISO-8601 instant format with its round trip."""

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dex_agents.pure.machine import deadlines
from dex_agents.pure.machine.deadlines import (
    MAX_INSTANT_MS,
    MIN_INSTANT_MS,
    deadline_ms,
    format_instant,
    is_late,
    parse_instant,
    timer_seconds,
)

NOW = 1_767_323_045_678  # 2026-01-02T03:04:05.678Z
DAY_MS = 24 * 60 * 60 * 1000
instants = st.integers(min_value=MIN_INSTANT_MS, max_value=MAX_INSTANT_MS)


def test_no_deadline_without_the_option() -> None:
    assert deadline_ms(NOW, None) is None


@pytest.mark.parametrize("after_ms", [0, 1, 1000, DAY_MS])
def test_deadline_is_now_plus_the_option(after_ms: int) -> None:
    assert deadline_ms(NOW, after_ms) == NOW + after_ms


@pytest.mark.parametrize("after_ms", [MAX_INSTANT_MS - NOW, MAX_INSTANT_MS, 10**30])
def test_deadline_beyond_year_9999_is_clamped_and_still_formats(after_ms: int) -> None:
    deadline = deadline_ms(NOW, after_ms)
    assert deadline == MAX_INSTANT_MS
    assert format_instant(deadline) == "9999-12-31T23:59:59.999Z"


def test_negative_deadline_option_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="interrupt_deadline_ms must be >= 0, got -1"):
        deadline_ms(NOW, -1)


@pytest.mark.parametrize(
    ("remaining_ms", "seconds"),
    [
        (1, 1),  # 1 ms -> 1 s
        (999, 1),
        (1000, 1),
        (1001, 2),
        (1999, 2),
        (2000, 2),  # exactly 2000 ms -> 2 s
        (2001, 3),
        (DAY_MS, 86_400),
        (0, 0),  # at the deadline: fire now
        (-1, 0),  # past the deadline: fire now
        (-DAY_MS, 0),
    ],
)
def test_timer_seconds_rounds_up_and_never_goes_negative(remaining_ms: int, seconds: int) -> None:
    assert timer_seconds(NOW, NOW + remaining_ms) == seconds


@given(st.integers(min_value=-(10**15), max_value=10**15), st.integers(min_value=-(10**15), max_value=10**15))
def test_timer_never_fires_before_the_deadline(now_ms: int, deadline: int) -> None:
    seconds = timer_seconds(now_ms, deadline)
    assert seconds >= 0
    assert now_ms + seconds * 1000 >= deadline, "the Timer fires at or after the deadline"
    if deadline > now_ms:
        assert now_ms + (seconds - 1) * 1000 < deadline, "and less than a second after it"


@pytest.mark.parametrize(
    ("now_ms", "late"),
    [(NOW - 1000, False), (NOW - 1, False), (NOW, True), (NOW + 1, True), (NOW + DAY_MS, True)],
)
def test_lateness_from_the_deadline_on(now_ms: int, late: bool) -> None:
    assert is_late(now_ms, NOW) is late


def test_never_late_without_a_deadline() -> None:
    assert is_late(NOW, None) is False
    assert is_late(MAX_INSTANT_MS, None) is False


@given(st.integers(min_value=0, max_value=10**13), st.integers(min_value=0, max_value=10**10))
def test_a_resolution_the_timer_would_beat_is_late(raised_ms: int, after_ms: int) -> None:
    deadline = deadline_ms(raised_ms, after_ms)
    assert deadline is not None
    fires_at = raised_ms + timer_seconds(raised_ms, deadline) * 1000
    assert is_late(fires_at, deadline), "when the deadline Timer fires, any answer is already late"


@pytest.mark.parametrize(
    ("epoch_ms", "text"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (1, "1970-01-01T00:00:00.001Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (NOW, "2026-01-02T03:04:05.678Z"),
        (NOW + DAY_MS, "2026-01-03T03:04:05.678Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (MIN_INSTANT_MS, "0001-01-01T00:00:00.000Z"),
        (MAX_INSTANT_MS, "9999-12-31T23:59:59.999Z"),
        (-61_000_000_000_000, "0036-12-26T11:33:20.000Z"),  # checked with GNU date -u
    ],
)
def test_format_and_parse_known_instants(epoch_ms: int, text: str) -> None:
    assert format_instant(epoch_ms) == text
    assert parse_instant(text) == epoch_ms


@pytest.mark.parametrize("epoch_ms", [MIN_INSTANT_MS - 1, MAX_INSTANT_MS + 1, 10**18, -(10**18)])
def test_format_instant_rejects_out_of_range(epoch_ms: int) -> None:
    with pytest.raises(ValueError, match="outside the years 0001..9999"):
        format_instant(epoch_ms)


@pytest.mark.parametrize(
    ("text", "epoch_ms"),
    [
        ("2026-01-02T03:04:05Z", NOW - 678),
        ("2026-01-02T03:04:05.6Z", NOW - 78),
        ("2026-01-02T03:04:05.678999Z", NOW),  # finer than a millisecond: floored
        ("2026-01-02T03:04:05.678999999Z", NOW),
        ("2026-01-02T05:04:05.678+02:00", NOW),
        ("2026-01-01T22:04:05.678-05:00", NOW),
        ("2026-01-02T03:04:05.678+00:00", NOW),
        ("1969-12-31T23:59:59.9995Z", -1),
    ],
)
def test_parse_instant_accepts_iso_variants(text: str, epoch_ms: int) -> None:
    assert parse_instant(text) == epoch_ms


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2026-01-02",  # a date, not an instant
        "2026-01-02T03:04:05.678",  # no offset: ambiguous
        "2026-01-02T03:04Z",  # no seconds
        "20260102T030405Z",  # basic format
        " 2026-01-02T03:04:05.678Z",
        "2026-01-02T03:04:05.678Z ",
        "2026-01-02 03:04:05.678Z",
        "2026-01-02T03:04:05.678z",
        "2026-01-02T03:04:05.1234567890Z",  # more than nanoseconds
        "1767323045678",
        "٢٠٢٦-01-02T03:04:05.678Z",  # non-ASCII digits
    ],
)
def test_parse_instant_rejects_malformed_text(text: str) -> None:
    with pytest.raises(ValueError, match="not an ISO-8601 instant like 2026-01-02T03:04:05.678Z"):
        parse_instant(text)


@pytest.mark.parametrize(
    "text", ["2026-13-02T03:04:05.678Z", "2026-02-30T03:04:05Z", "2026-01-02T24:00:00Z", "2026-01-02T03:04:05+24:00"]
)
def test_parse_instant_rejects_impossible_instants(text: str) -> None:
    with pytest.raises(ValueError, match="not a valid instant"):
        parse_instant(text)


@given(instants)
def test_format_parse_round_trip(epoch_ms: int) -> None:
    text = format_instant(epoch_ms)
    assert len(text) == 24 and text.endswith("Z") and text[10] == "T" and text[19] == "."
    assert parse_instant(text) == epoch_ms


@given(instants, instants)
def test_formatted_instants_sort_like_their_epochs(a: int, b: int) -> None:
    assert (format_instant(a) < format_instant(b)) == (a < b)


def test_docstring_examples() -> None:
    results = doctest.testmod(deadlines)
    assert results.attempted > 0
    assert results.failed == 0
