"""Golden sessions: exports of real sessions (``generate``) replayed offline through the installed
reducers. A change to the core that treats one of them differently fails here with the first
difference (the value, the turn, the input)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pyrsistent import PMap, pvector

from dex_agents.pure.offline.export_document import ExportDocument, read_export
from dex_agents.pure.offline.input_wire import input_to_data
from dex_agents.pure.offline.reconstruct import reconstruct_inputs
from dex_agents.pure.machine.reducers import reduce
from dex_agents.pure.offline.replay_report import replay_export, replay_export_text
from dex_agents.pure.values.runner import TurnCompleted
from dex_agents.pure.machine.state import SessionConfig, SessionState
from dex_agents.pure.machine.step_inputs import ModelCallFinished, SessionInput, UserMessageArrived
from dex_agents.pure.machine.effects import PublishToChannel, Write
from dex_agents.pure.machine.transition import RpcTransition, Transition, reject
from dex_agents.pure.values.session import ToolCallStatus
from dex_agents.pure.wire import JSON_VALUE_TYPE, to_json_data

GOLDEN_DIRECTORY = Path(__file__).resolve().parent
GOLDEN = sorted(GOLDEN_DIRECTORY.glob("*.json"))


def load(name: str) -> ExportDocument:
    return read_export((GOLDEN_DIRECTORY / f"{name}.json").read_text(encoding="utf-8")).unwrap()


def test_the_golden_sessions_are_the_four_scenarios() -> None:
    assert [path.stem for path in GOLDEN] == ["failed_turn", "long_session", "outcome_unknown", "rejection"]


@pytest.mark.parametrize("path", GOLDEN, ids=lambda path: path.stem)
def test_the_installed_reducers_replay_a_golden_session_identically(path: Path) -> None:
    report = replay_export_text(path.read_text(encoding="utf-8")).unwrap()
    assert report.identical, "\n".join(report.describe())


@pytest.mark.parametrize("path", GOLDEN, ids=lambda path: path.stem)
def test_the_history_of_a_golden_session_rebuilds_its_inputs(path: Path) -> None:
    document = read_export(path.read_text(encoding="utf-8")).unwrap()
    rebuilt = reconstruct_inputs(document.session.session_id, document.steps)
    assert [(item.step, input_to_data(item.input)) for item in rebuilt.inputs] == [
        (item.step, to_json_data(item.input, JSON_VALUE_TYPE)) for item in document.inputs]
    assert (rebuilt.clock, rebuilt.notes) == (document.reconstruction.clock, document.reconstruction.notes)


def test_each_golden_session_holds_its_scenario() -> None:
    failed = load("failed_turn").snapshot
    assert failed.state is not None and failed.state.failed_turn_count == 1
    assert (failed.messages[1].text or "").startswith("[Dex] The previous turn failed after these tool calls ran:")
    statuses = [write.value.get("status") for step in load("rejection").steps for write in step.writes
                if write.name == "AgentToolCalls" and isinstance(write.value, PMap)]
    assert statuses == ["awaiting_approval", ToolCallStatus.REJECTED.value]
    unknown = load("outcome_unknown")
    assert any(step.step_type == "RecordToolOutcomeUnknown" for step in unknown.steps)
    assert any(step.outcome == "failed" and step.step_type == "CallSingleAttemptTool" for step in unknown.steps)
    long = load("long_session").snapshot
    assert long.state is not None and long.state.completed_turn_count == 10 and long.queued_message_count == 0
    assert [message.text for message in long.messages if message.role.value == "user"] == [
        f"message {number}" for number in range(1, 11)]


def test_a_seeded_change_to_a_reducer_is_reported_at_the_value_the_turn_and_the_input() -> None:
    def seeded(state: SessionState, config: SessionConfig, session_input: SessionInput) -> Transition:
        if isinstance(session_input, ModelCallFinished) and isinstance(session_input.outcome, TurnCompleted) \
                and state.current_turn_id == "turn-3":
            last = session_input.outcome.new_messages[-1]
            changed = session_input.outcome.new_messages.set(-1, dataclasses.replace(last, text="changed"))
            outcome = dataclasses.replace(session_input.outcome, new_messages=changed)
            return reduce(state, config, dataclasses.replace(session_input, outcome=outcome))
        return reduce(state, config, session_input)

    report = replay_export(load("long_session"), reducer=seeded).unwrap()
    difference = report.difference
    assert difference is not None
    assert difference.value == "AgentMessages/000000000006" and difference.turn_id == "turn-3"
    assert difference.input_kind == "model_call_finished" and difference.step == "RunModel-3 (execute, attempt 1)"
    lines = report.describe()
    assert lines[0].endswith(": differs") and lines[1].startswith("first difference: AgentMessages/000000000006")
    assert any('"text":"changed"' in line for line in lines)


def test_a_reducer_that_refuses_a_committed_input_is_reported() -> None:
    def refusing(state: SessionState, config: SessionConfig, session_input: SessionInput) -> Transition:
        if isinstance(session_input, UserMessageArrived):
            return reject(state, "seeded refusal")
        return reduce(state, config, session_input)

    difference = replay_export(load("failed_turn"), reducer=refusing).unwrap().difference
    assert difference is not None and difference.value == "transition"
    assert "seeded refusal" in difference.explanation and difference.input_kind == "user_message_arrived"


def test_a_difference_only_in_the_snapshot_is_reported_at_its_field() -> None:
    def miscounting(state: SessionState, config: SessionConfig, session_input: SessionInput) -> Transition:
        transition = reduce(state, config, session_input)
        return dataclasses.replace(transition, state=dataclasses.replace(transition.state, queued_message_count=7))

    difference = replay_export(load("rejection"), reducer=miscounting).unwrap().difference
    assert difference is not None and difference.value == "snapshot.queued_message_count"
    assert (difference.expected, difference.replayed, difference.input_index) == (0, 7, None)


def test_a_missing_input_is_reported_as_a_write_the_replay_does_not_make() -> None:
    document = load("rejection")
    trimmed = dataclasses.replace(document, inputs=pvector(document.inputs[:-2]))
    difference = replay_export(trimmed).unwrap().difference
    assert difference is not None and "the replay does not write it" in difference.explanation
    assert difference.replayed is None and difference.expected is not None


def test_a_reducer_that_publishes_otherwise_is_reported_at_the_channel() -> None:
    def silent(state: SessionState, config: SessionConfig, session_input: SessionInput) -> Transition:
        transition = reduce(state, config, session_input)
        if isinstance(transition, RpcTransition):
            kept: list[Write] = [effect for effect in transition.effects if not isinstance(effect, PublishToChannel)]
            return dataclasses.replace(transition, effects=pvector(kept))
        return transition

    difference = replay_export(load("failed_turn"), reducer=silent).unwrap().difference
    assert difference is not None and difference.value == "published QueuedUserMessages"
    assert difference.explanation == "the replay does not publish it in this step"
    assert difference.input_kind == "send_user_message_once_called" and difference.replayed is None
