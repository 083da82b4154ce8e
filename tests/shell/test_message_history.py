"""The Worker's cache of committed messages (``shell.history``): what a turn loads stays the turn's
own messages, a cold Worker reads the rest from Dex's committed state, and the reads answer what a
whole-map load answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dex import AttributeMapNotLoadedError
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pvector

from dex_agents.pure.machine.keys import message_sequence_key
from dex_agents.pure.machine.paging import page_messages, page_window
from dex_agents.pure.values.persistence import MapName
from dex_agents.pure.values.session import AgentMessage, MessageRole
from dex_agents.shell.definitions import AGENT_MESSAGES
from dex_agents.shell.history import (
    MessageHistory,
    MessagesUnavailableError,
    message_loads,
    message_size,
    plan_read,
    read_messages_sync,
)
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.scenario_flows import new_session_id, scripted_runner, session_flow


def message(sequence: int) -> AgentMessage:
    return AgentMessage(sequence=sequence, turn_id="turn-1", role=MessageRole.USER, text=f"m{sequence}",
                        tool_call_id=None, tool_name=None, tool_arguments=None, tool_output=None,
                        framework_item=f'{{"m":{sequence}}}')


def messages(low: int, high: int) -> list[AgentMessage]:
    return [message(sequence) for sequence in range(low, high + 1)]


class PartlyLoaded:
    """A Context whose ``AgentMessages`` instances ``loaded`` were loaded (the others raise, as the SDK's do)."""

    def __init__(self, loaded: list[AgentMessage], *, flow_id: str = "s-1", run_id: str = "r-1") -> None:
        self.flow_id = flow_id
        self.run_id = run_id
        self._loaded = {message_sequence_key(m.sequence): m for m in loaded}

    def _get_attribute(self, definition: Any, instance: str | None) -> object:
        assert definition is AGENT_MESSAGES and instance is not None
        if instance not in self._loaded:
            raise AttributeMapNotLoadedError(f"not loaded: {instance}")
        return self._loaded[instance]


class ListReader:
    """A reader of committed messages that records what it was asked."""

    def __init__(self, stored: list[AgentMessage]) -> None:
        self.stored = {m.sequence: m for m in stored}
        self.asked: list[range] = []

    def read(self, flow_id: str, run_id: str, sequences: range) -> list[AgentMessage]:
        self.asked.append(sequences)
        return [self.stored[sequence] for sequence in sequences]


def test_the_cache_keeps_the_longest_committed_prefix_per_run_and_drops_the_least_recent() -> None:
    history = MessageHistory(max_characters=11 * message_size(message(1)))
    history.remember("a", "r", pvector(messages(1, 3)))
    history.remember("a", "r", pvector(messages(1, 2)))
    assert history.covered("a", "r") == 3
    assert history.covered("a", "other-run") == 0
    history.remember("b", "r", pvector(messages(1, 3)))
    history.prefix("a", "r")  # a is now the most recent
    history.remember("c", "r", pvector(messages(1, 6)))
    assert (history.covered("a", "r"), history.covered("b", "r"), history.covered("c", "r")) == (3, 0, 6)
    history.remember("d", "r", pvector(messages(1, 40)))  # more than the whole bound: not kept
    assert history.covered("d", "r") == 0
    history.forget("a", "r")
    assert history.covered("a", "r") == 0


def test_a_read_takes_the_loaded_suffix_and_the_cached_prefix_and_reads_only_the_gap() -> None:
    history = MessageHistory()
    reader = ListReader(messages(1, 9))
    history.reader = reader  # type: ignore[assignment]
    history.remember("s-1", "r-1", pvector(messages(1, 3)))
    context: Any = PartlyLoaded(messages(7, 9))
    planned = plan_read(context, history, 1, 9)
    assert (len(planned.cached), [m.sequence for m in planned.loaded], planned.missing) == (3, [7, 8, 9], range(4, 7))
    assert list(read_messages_sync(context, history, 1, 9)) == messages(1, 9)
    assert reader.asked == [range(4, 7)]
    assert history.covered("s-1", "r-1") == 9
    assert list(read_messages_sync(PartlyLoaded([]), history, 1, 9)) == messages(1, 9)  # type: ignore[arg-type]
    assert list(read_messages_sync(PartlyLoaded([]), history, 4, 6)) == messages(4, 6)  # type: ignore[arg-type]
    assert reader.asked == [range(4, 7)]


def test_a_window_past_the_cache_reads_only_the_window_and_leaves_the_cache() -> None:
    history = MessageHistory()
    reader = ListReader(messages(1, 100))
    history.reader = reader  # type: ignore[assignment]
    history.remember("s-1", "r-1", pvector(messages(1, 10)))
    assert list(read_messages_sync(PartlyLoaded([]), history, 50, 60)) == messages(50, 60)  # type: ignore[arg-type]
    assert reader.asked == [range(50, 61)]
    assert history.covered("s-1", "r-1") == 10
    assert list(read_messages_sync(PartlyLoaded([]), history, 5, 12)) == messages(5, 12)  # type: ignore[arg-type]
    assert history.covered("s-1", "r-1") == 12


def test_a_gap_without_a_reader_fails_with_what_to_do_and_a_short_read_fails() -> None:
    history = MessageHistory()
    with pytest.raises(MessagesUnavailableError, match="session_worker"):
        read_messages_sync(PartlyLoaded(messages(3, 3)), history, 1, 3)  # type: ignore[arg-type]
    planned = plan_read(PartlyLoaded([]), history, 1, 3)  # type: ignore[arg-type]
    with pytest.raises(MessagesUnavailableError, match="expected"):
        planned.complete(history, messages(1, 2))


def test_a_movement_loads_what_the_cache_lacks_or_the_whole_map_without_a_reader() -> None:
    history = MessageHistory()
    assert message_loads(history, "s-1", "r-1", 5) is None
    history.reader = ListReader([])  # type: ignore[assignment]
    history.remember("s-1", "r-1", pvector(messages(1, 3)))
    loads = message_loads(history, "s-1", "r-1", 5)
    assert loads is not None
    assert [load.physical_name for load in loads(MapName.AGENT_MESSAGES)] == [
        f"AgentMessages/{message_sequence_key(4)}", f"AgentMessages/{message_sequence_key(5)}"]
    with pytest.raises(ValueError):
        loads(MapName.AGENT_TOOL_CALLS)


@given(count=st.integers(0, 40), before=st.none() | st.integers(-3, 45), limit=st.none() | st.integers(-2, 60))
def test_paging_the_window_gives_the_page_paging_everything_gives(count: int, before: int | None,
                                                                   limit: int | None) -> None:
    everything = messages(1, count)
    low, high = page_window(count, before, limit)
    assert page_messages(everything[low - 1:high], before, limit) == page_messages(everything, before, limit)


def test_a_cold_worker_reads_committed_messages_and_every_read_answers_the_same(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = session_flow(scripted_runner(tmp_path, {}), prefix="History")
    sessions = agent_sessions(agent_environment([flow]), flow)
    session_id = new_session_id()
    sessions.start_session(session_id, "first")
    sessions.wait_for_completed_turns(session_id, 1)
    for turn in range(2, 6):
        assert sessions.send_user_message(session_id, f"message {turn}")
        sessions.wait_for_completed_turns(session_id, turn)
    warm = sessions.snapshot(session_id)
    warm_page = sessions.list_messages(session_id, limit=3)
    history = flow.runtime.history
    assert history.covered(session_id, _run_of(history, session_id)) == len(warm.messages)

    history.forget(session_id, _run_of(history, session_id))  # as a restarted Worker: nothing cached
    assert sessions.snapshot(session_id) == warm
    history.forget(session_id, _run_of(history, session_id))
    assert sessions.list_messages(session_id, limit=3) == warm_page
    history.forget(session_id, _run_of(history, session_id))
    assert sessions.send_user_message(session_id, "after the restart")
    state = sessions.wait_for_completed_turns(session_id, 6)
    assert state.failed_turn_count == 0
    after = sessions.snapshot(session_id)
    assert list(after.messages[:len(warm.messages)]) == list(warm.messages)
    assert [m.text for m in after.messages[-2:]][0] == "after the restart"


def _run_of(history: MessageHistory, session_id: str) -> str:
    runs = [run for flow_id, run in history._runs if flow_id == session_id]
    return runs[0] if runs else "none"
