"""Message paging: limit clamping, before_sequence edges, page links, and reassembling every message
exactly once by following next_before_sequence."""

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pvector

from dex_agents.pure.machine import paging
from dex_agents.pure.machine.paging import clamp_limit, page_messages
from dex_agents.pure.values.rpc import AgentMessagePage
from dex_agents.pure.values.session import AgentMessage, MessageRole


def message(sequence: int) -> AgentMessage:
    return AgentMessage(
        sequence=sequence,
        turn_id="turn-1",
        role=MessageRole.USER if sequence % 2 else MessageRole.ASSISTANT,
        text=f"message {sequence}",
        tool_call_id=None,
        tool_name=None,
        tool_arguments=None,
        tool_output=None,
        framework_item=f'{{"n":{sequence}}}',
    )


def history(count: int) -> list[AgentMessage]:
    return [message(sequence) for sequence in range(1, count + 1)]


def sequences(page: AgentMessagePage) -> list[int]:
    return [item.sequence for item in page.messages]


@pytest.mark.parametrize(
    ("limit", "effective"),
    [
        (None, 50),
        (0, 1),
        (-1, 1),
        (-1000, 1),
        (1, 1),
        (2, 2),
        (50, 50),
        (199, 199),
        (200, 200),
        (201, 200),
        (10**9, 200),
    ],
)
def test_clamp_limit(limit: int | None, effective: int) -> None:
    assert clamp_limit(limit) == effective


@given(st.none() | st.integers())
def test_clamp_limit_is_always_in_range(limit: int | None) -> None:
    assert 1 <= clamp_limit(limit) <= 200


def test_empty_history() -> None:
    assert page_messages([], None, None) == AgentMessagePage(messages=pvector(), next_before_sequence=None)
    assert page_messages([], 10, 5) == AgentMessagePage(messages=pvector(), next_before_sequence=None)


def test_latest_page_by_default() -> None:
    page = page_messages(history(120), None, None)
    assert sequences(page) == list(range(71, 121))
    assert page.next_before_sequence == 71


def test_whole_history_fits_one_page() -> None:
    page = page_messages(history(7), None, None)
    assert sequences(page) == [1, 2, 3, 4, 5, 6, 7]
    assert page.next_before_sequence is None


def test_exact_fit_has_no_next_page() -> None:
    page = page_messages(history(5), None, 5)
    assert sequences(page) == [1, 2, 3, 4, 5]
    assert page.next_before_sequence is None


def test_before_sequence_pages_older_messages() -> None:
    page = page_messages(history(10), 8, 3)
    assert sequences(page) == [5, 6, 7]
    assert page.next_before_sequence == 5


@pytest.mark.parametrize("before_sequence", [11, 12, 1_000_000])
def test_before_sequence_beyond_the_end_pages_from_the_newest(before_sequence: int) -> None:
    page = page_messages(history(10), before_sequence, 4)
    assert sequences(page) == [7, 8, 9, 10]
    assert page.next_before_sequence == 7


def test_before_sequence_at_the_newest_excludes_it() -> None:
    assert sequences(page_messages(history(10), 10, 4)) == [6, 7, 8, 9]


@pytest.mark.parametrize("before_sequence", [1, 0, -7])
def test_before_sequence_at_or_below_one_is_an_empty_last_page(before_sequence: int) -> None:
    assert page_messages(history(10), before_sequence, None) == AgentMessagePage(
        messages=pvector(), next_before_sequence=None
    )


def test_before_sequence_two_gives_the_first_message_and_no_next_page() -> None:
    page = page_messages(history(10), 2, 50)
    assert sequences(page) == [1]
    assert page.next_before_sequence is None


@pytest.mark.parametrize(("limit", "count"), [(None, 50), (0, 1), (-3, 1), (1, 1), (200, 200), (201, 200)])
def test_limit_edges_on_a_long_history(limit: int | None, count: int) -> None:
    page = page_messages(history(300), None, limit)
    assert sequences(page) == list(range(301 - count, 301))
    assert page.next_before_sequence == 301 - count


def test_unsorted_input_is_paged_by_sequence_and_left_unchanged() -> None:
    shuffled = [message(sequence) for sequence in (4, 1, 5, 3, 2)]
    before = list(shuffled)
    page = page_messages(shuffled, None, 3)
    assert sequences(page) == [3, 4, 5]
    assert page.next_before_sequence == 3
    assert shuffled == before


@given(
    count=st.integers(min_value=0, max_value=450),
    limit=st.none() | st.integers(min_value=-5, max_value=260),
    data=st.data(),
)
def test_following_pages_yields_every_message_exactly_once(count: int, limit: int | None, data: st.DataObject) -> None:
    messages = data.draw(st.permutations(history(count)))
    collected: list[AgentMessage] = []
    before_sequence: int | None = None
    pages = 0
    while True:
        page = page_messages(messages, before_sequence, limit)
        pages += 1
        assert len(page.messages) <= clamp_limit(limit)
        assert sequences(page) == sorted(sequences(page)), "each page is oldest first"
        if page.next_before_sequence is not None:
            assert len(page.messages) == clamp_limit(limit), "only the oldest page is short"
            assert page.next_before_sequence == page.messages[0].sequence
        collected[:0] = page.messages
        if page.next_before_sequence is None:
            break
        before_sequence = page.next_before_sequence
    assert collected == history(count)
    expected_pages = max(1, -(-count // clamp_limit(limit)))
    assert pages == expected_pages


def test_docstring_examples() -> None:
    results = doctest.testmod(paging)
    assert results.attempted > 0
    assert results.failed == 0
