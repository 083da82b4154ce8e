"""Delta coalescing: flush by time (100 ms) and by size (1,024 characters), on kind change and on
close, timer ticks, empty deltas, AgentEvent-ready output, and properties over random delta streams."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap, pvector

from dex_agents.pure.machine.coalescing import (
    EMPTY_DELTA_BUFFER,
    FLUSH_AFTER_MS,
    FLUSH_AT_CHARACTERS,
    CoalescedDelta,
    CoalescerStep,
    DeltaBuffer,
    DeltaKind,
    EmptyDeltaBuffer,
    PendingDeltas,
    add_delta,
    flush,
    flush_due_at,
    flush_if_due,
)
from dex_agents.pure.values.session import AgentEvent

TEXT = DeltaKind.TEXT
REASONING = DeltaKind.REASONING


def text_of(step: CoalescerStep) -> list[tuple[DeltaKind, str]]:
    return [(event.kind, event.text) for event in step.flushed]


def feed(deltas: list[tuple[DeltaKind, str, int]]) -> tuple[DeltaBuffer, list[tuple[DeltaKind, str]]]:
    buffer: DeltaBuffer = EMPTY_DELTA_BUFFER
    written: list[tuple[DeltaKind, str]] = []
    for kind, text, now_ms in deltas:
        step = add_delta(buffer, kind, text, now_ms)
        buffer = step.buffer
        written.extend(text_of(step))
    return buffer, written


def test_constants_match_the_spec() -> None:
    assert FLUSH_AFTER_MS == 100
    assert FLUSH_AT_CHARACTERS == 1024
    assert TEXT.value == "text_delta" and REASONING.value == "reasoning_delta"


def test_first_delta_is_buffered() -> None:
    step = add_delta(EMPTY_DELTA_BUFFER, TEXT, "Hel", 1_000)
    assert step == CoalescerStep(buffer=PendingDeltas(kind=TEXT, text="Hel", first_delta_ms=1_000), flushed=pvector())


def test_consecutive_deltas_merge_within_the_window() -> None:
    buffer, written = feed([(TEXT, "Hel", 1_000), (TEXT, "lo", 1_050), (TEXT, " wor", 1_099)])
    assert written == []
    assert buffer == PendingDeltas(kind=TEXT, text="Hello wor", first_delta_ms=1_000)


def test_flush_by_time_at_exactly_100_ms_includes_the_new_delta() -> None:
    buffer, written = feed([(TEXT, "Hel", 1_000), (TEXT, "lo", 1_050), (TEXT, "!", 1_100)])
    assert written == [(TEXT, "Hello!")]
    assert buffer == EMPTY_DELTA_BUFFER


def test_the_window_restarts_after_a_flush() -> None:
    buffer, written = feed(
        [(TEXT, "a", 0), (TEXT, "b", 150), (TEXT, "c", 200), (TEXT, "d", 250), (TEXT, "e", 300), (TEXT, "f", 310)]
    )
    assert written == [(TEXT, "ab"), (TEXT, "cde")]
    assert buffer == PendingDeltas(kind=TEXT, text="f", first_delta_ms=310)


def test_flush_by_size_at_exactly_1024_characters() -> None:
    buffer, written = feed([(TEXT, "x" * 1000, 0), (TEXT, "y" * 23, 1)])
    assert written == []
    assert isinstance(buffer, PendingDeltas) and len(buffer.text) == 1023
    step = add_delta(buffer, TEXT, "z", 2)
    assert text_of(step) == [(TEXT, "x" * 1000 + "y" * 23 + "z")]
    assert step.buffer == EMPTY_DELTA_BUFFER


def test_a_long_single_delta_is_written_whole_at_once() -> None:
    long_text = "é" * 5000
    step = add_delta(EMPTY_DELTA_BUFFER, REASONING, long_text, 7)
    assert text_of(step) == [(REASONING, long_text)]
    assert step.buffer == EMPTY_DELTA_BUFFER


def test_kind_change_flushes_the_buffered_kind_first() -> None:
    buffer, written = feed([(REASONING, "think", 0), (REASONING, "ing", 10), (TEXT, "Answer", 20)])
    assert written == [(REASONING, "thinking")]
    assert buffer == PendingDeltas(kind=TEXT, text="Answer", first_delta_ms=20)


def test_kind_change_starts_a_new_window() -> None:
    buffer, written = feed([(REASONING, "r", 0), (TEXT, "t", 90), (TEXT, "u", 150)])
    assert written == [(REASONING, "r")]
    assert buffer == PendingDeltas(kind=TEXT, text="tu", first_delta_ms=90)


def test_kind_change_after_the_window_writes_both_in_order() -> None:
    buffer, written = feed([(REASONING, "r", 0), (TEXT, "t" * 2000, 500)])
    assert written == [(REASONING, "r"), (TEXT, "t" * 2000)]
    assert buffer == EMPTY_DELTA_BUFFER


def test_close_flushes_what_is_buffered() -> None:
    buffer, _ = feed([(TEXT, "partial", 0)])
    step = flush(buffer)
    assert text_of(step) == [(TEXT, "partial")]
    assert step.buffer == EMPTY_DELTA_BUFFER
    assert flush(EMPTY_DELTA_BUFFER) == CoalescerStep(buffer=EMPTY_DELTA_BUFFER, flushed=pvector())


@pytest.mark.parametrize(
    ("now_ms", "flushed"), [(1_000, False), (1_099, False), (1_100, True), (5_000, True), (900, False)]
)
def test_timer_tick_flushes_only_when_due(now_ms: int, flushed: bool) -> None:
    buffer = PendingDeltas(kind=TEXT, text="abc", first_delta_ms=1_000)
    step = flush_if_due(buffer, now_ms)
    if flushed:
        written = pvector([CoalescedDelta(kind=TEXT, text="abc")])
        assert step == CoalescerStep(buffer=EMPTY_DELTA_BUFFER, flushed=written)
    else:
        assert step == CoalescerStep(buffer=buffer, flushed=pvector())


def test_timer_tick_on_an_empty_buffer_does_nothing() -> None:
    assert flush_if_due(EMPTY_DELTA_BUFFER, 10**9) == CoalescerStep(buffer=EMPTY_DELTA_BUFFER, flushed=pvector())


def test_flush_due_at() -> None:
    assert flush_due_at(EMPTY_DELTA_BUFFER) is None
    assert flush_due_at(PendingDeltas(kind=TEXT, text="a", first_delta_ms=1_234)) == 1_334


def test_empty_delta_starts_nothing() -> None:
    assert add_delta(EMPTY_DELTA_BUFFER, TEXT, "", 0) == CoalescerStep(buffer=EMPTY_DELTA_BUFFER, flushed=pvector())


def test_empty_delta_of_the_other_kind_keeps_the_buffer() -> None:
    buffer = PendingDeltas(kind=TEXT, text="abc", first_delta_ms=0)
    assert add_delta(buffer, REASONING, "", 50) == CoalescerStep(buffer=buffer, flushed=pvector())


def test_empty_delta_lets_a_due_flush_happen() -> None:
    buffer = PendingDeltas(kind=TEXT, text="abc", first_delta_ms=0)
    assert text_of(add_delta(buffer, REASONING, "", 100)) == [(TEXT, "abc")]


def test_clock_stepping_back_never_flushes_by_time() -> None:
    buffer, written = feed([(TEXT, "a", 1_000), (TEXT, "b", 500), (TEXT, "c", 1_099)])
    assert written == []
    assert buffer == PendingDeltas(kind=TEXT, text="abc", first_delta_ms=1_000)


def test_coalesced_delta_is_agent_event_ready() -> None:
    delta = CoalescedDelta(kind=REASONING, text="why")
    assert delta.type == "reasoning_delta"
    assert delta.payload == pmap({"text": "why"})
    assert delta.to_event(turn_id="turn-2", attempt=3, step_execution_id="exec-9") == AgentEvent(
        type="reasoning_delta", turn_id="turn-2", attempt=3, step_execution_id="exec-9", payload=pmap({"text": "why"})
    )
    outside_a_turn = CoalescedDelta(kind=TEXT, text="hi").to_event(turn_id=None, attempt=1, step_execution_id="e")
    assert outside_a_turn.type == "text_delta"
    assert outside_a_turn.turn_id is None


def test_inputs_are_not_mutated() -> None:
    buffer = PendingDeltas(kind=TEXT, text="abc", first_delta_ms=0)
    add_delta(buffer, TEXT, "d", 10)
    add_delta(buffer, REASONING, "d", 200)
    flush(buffer)
    assert buffer == PendingDeltas(kind=TEXT, text="abc", first_delta_ms=0)
    assert EMPTY_DELTA_BUFFER == EmptyDeltaBuffer()


@st.composite
def delta_streams(draw: st.DrawFn) -> list[tuple[DeltaKind, str, int]]:
    count = draw(st.integers(min_value=0, max_value=40))
    now_ms = draw(st.integers(min_value=0, max_value=10**6))
    stream: list[tuple[DeltaKind, str, int]] = []
    for _ in range(count):
        now_ms += draw(st.integers(min_value=0, max_value=150))
        kind = draw(st.sampled_from(DeltaKind))
        text = draw(st.text(alphabet="ab é\n", max_size=draw(st.sampled_from([0, 5, 300, 1500]))))
        stream.append((kind, text, now_ms))
    return stream


def runs(pairs: list[tuple[DeltaKind, str]]) -> list[tuple[DeltaKind, str]]:
    """Merge adjacent pairs of one kind and drop empty texts."""
    merged: list[tuple[DeltaKind, str]] = []
    for kind, text in pairs:
        if text == "":
            continue
        if merged and merged[-1][0] == kind:
            merged[-1] = (kind, merged[-1][1] + text)
        else:
            merged.append((kind, text))
    return merged


@given(delta_streams())
def test_coalescing_loses_reorders_and_duplicates_nothing(stream: list[tuple[DeltaKind, str, int]]) -> None:
    buffer: DeltaBuffer = EMPTY_DELTA_BUFFER
    written: list[tuple[DeltaKind, str]] = []
    longest_delta = max((len(text) for _, text, _ in stream), default=0)
    for kind, text, now_ms in stream:
        step = add_delta(buffer, kind, text, now_ms)
        buffer = step.buffer
        written.extend(text_of(step))
        match buffer:
            case PendingDeltas(kind=buffered_kind, text=buffered_text, first_delta_ms=first_delta_ms):
                assert buffered_text != ""
                assert len(buffered_text) < FLUSH_AT_CHARACTERS
                assert now_ms - first_delta_ms < FLUSH_AFTER_MS
                if text:
                    assert buffered_kind == kind
            case EmptyDeltaBuffer():
                pass
    written.extend(text_of(flush(buffer)))
    assert all(text != "" for _, text in written)
    assert all(len(text) < FLUSH_AT_CHARACTERS + longest_delta for _, text in written)
    assert runs(written) == runs([(kind, text) for kind, text, _ in stream])


@given(delta_streams())
def test_delta_stream_within_one_window_and_size_is_one_event_per_kind_run(
    stream: list[tuple[DeltaKind, str, int]],
) -> None:
    # Squeeze every delta into one instant and below the size threshold: only kind changes split.
    squeezed = [(kind, text[:10], 0) for kind, text, _ in stream][:50]
    buffer, written = feed(squeezed)
    written.extend(text_of(flush(buffer)))
    assert written == runs([(kind, text) for kind, text, _ in squeezed])
