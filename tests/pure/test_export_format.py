"""The export's pure parts: the inputs' JSON (``input_wire``), the document (``export_document``), the
stored-value model (``stored_values``), the invocation record, and the replay's report of what it
cannot read."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import pytest
from hypothesis import given
from pyrsistent import pmap, pvector

from dex_agents.pure.machine.effects import DeleteAttribute, DeleteMapInstance, SetAttribute
from dex_agents.pure.offline.export_document import (
    EXPORT_VERSION,
    ExportDocument,
    ExportedInput,
    RewoundRun,
    read_export,
    render_export,
)
from dex_agents.pure.offline.input_wire import INPUT_KINDS, input_from_data, input_to_data
from dex_agents.pure.machine.compaction import CompactionPolicy
from dex_agents.pure.machine.invocation_record import InvocationRecord, RecordedCompaction, clock_of, invocation_record
from dex_agents.pure.machine.rpc_calls import AgentSnapshotRequested, ResolveInterruptCalled, SendUserMessageOnceCalled
from dex_agents.pure.values.persistence import AGENT_STATE, AGENT_TOOL_CALLS, FRAMEWORK_RUN_STATE
from dex_agents.pure.wire import decode
from dex_agents.pure.offline.replay_report import decoded_inputs, first_json_difference, replay_export, replay_export_text
from dex_agents.pure.values.rpc import ResolveInterruptInput, SendUserMessageOnceInput
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.step_inputs import ModelStepStarted, SessionInput
from dex_agents.pure.wire.json_value import JsonValue
from dex_agents.pure.offline.stored_values import (
    StoredKey,
    apply_writes,
    decode_stored,
    freeze,
    same_json,
    state_from_values,
    stored_writes,
    value_json,
)
from dex_agents.pure.values.session import AgentState, AgentStatus
from tests.pure.scenario_support import invocation
from tests.pure.session_strategies import session_inputs_any

GOLDEN = Path(__file__).resolve().parents[1] / "golden_sessions" / "rejection.json"


def golden() -> ExportDocument:
    return read_export(GOLDEN.read_text(encoding="utf-8")).unwrap()


# input_wire


@given(session_inputs_any)
def test_every_input_round_trips_through_its_json(session_input: SessionInput) -> None:
    data = json.loads(json.dumps(input_to_data(session_input)))
    assert input_from_data(data).unwrap() == session_input


def test_every_input_type_has_a_kind() -> None:
    members: set[object] = set()
    for alias in typing.get_args(SessionInput):
        members |= set(typing.get_args(alias)) or {alias}
    assert set(INPUT_KINDS.values()) == members


@pytest.mark.parametrize(
    ("data", "path", "expected"),
    [
        ([], "$", "an object with a kind"),
        ({"invocation": {}}, "$.kind", "one of"),
        ({"kind": "nonsense"}, "$.kind", "one of"),
        ({"kind": "agent_snapshot_requested", "extra": 1}, "$.extra", "only the fields of AgentSnapshotRequested"),
        ({"kind": "tool_results_arrived", "expected": 1}, "$.invocation", "a value"),
        ({"kind": "model_call_finished", "invocation": {"flow_id": "f", "step_execution_id": "s", "attempt": 1,
                                                        "now_ms": 1}, "outcome": {"kind": "done"}},
         "$.outcome.kind", "one of \"completed\", \"tool_calls_requested\""),
        ({"kind": "model_call_finished", "invocation": {"flow_id": "f", "step_execution_id": "s", "attempt": 1,
                                                        "now_ms": 1}, "outcome": {"kind": "completed", "usage": {}}},
         "$.outcome.new_messages", "array"),
        ({"kind": "tool_results_arrived", "expected": "2",
          "invocation": {"flow_id": "f", "step_execution_id": "s", "attempt": 1, "now_ms": 1}},
         "$.expected", "integer"),
    ],
)
def test_a_malformed_input_is_refused_with_its_path(data: object, path: str, expected: str) -> None:
    error = input_from_data(data).failure()
    assert error.path == path and expected in error.expected, error


# export_document


def test_an_export_renders_one_line_per_element_and_reads_back() -> None:
    document = golden()
    text = render_export(document)
    assert text == GOLDEN.read_text(encoding="utf-8")
    assert read_export(text).unwrap() == document
    assert text.splitlines()[0] == "{" and any(line.startswith('{"attempt":') for line in text.splitlines())
    empty = dataclasses.replace(document, events=pvector())
    assert '"events": [],' in render_export(empty)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "not a dex-agents session export (its format is None"),
        ('{"format": "other"}', "its format is 'other'"),
        ('{"format": "dex-agents-session-export", "version": 2}', "this is a version 2 session export"),
        ('{"format": "dex-agents-session-export", "version": true}', "version True session export"),
        ('{"format": "dex-agents-session-export", "version": 1}', "malformed session export: cannot decode "
                                                                  "ExportDocument: at $.exported_at"),
        ("{", "malformed session export"),
    ],
)
def test_what_is_not_an_export_of_this_version_is_refused_by_name(text: str, message: str) -> None:
    assert message in read_export(text).failure().message
    assert str(read_export(text).failure()) == read_export(text).failure().message
    assert EXPORT_VERSION == 1


def test_inputs_that_cannot_be_decoded_or_are_out_of_order_are_refused() -> None:
    document = golden()
    bad = dataclasses.replace(document, inputs=pvector([ExportedInput(step=0, input=pmap({"kind": freeze("?")}))]))
    assert "at $.inputs[0].input.kind" in replay_export(bad).failure().message
    late = dataclasses.replace(document, inputs=pvector([document.inputs[-1], document.inputs[0]]))
    assert "not a step index in commit order" in decoded_inputs(late).failure().message
    outside = dataclasses.replace(document, inputs=pvector([dataclasses.replace(document.inputs[0], step=999)]))
    assert "inputs[0].step is 999" in replay_export(outside).failure().message
    assert "version 3" in replay_export_text('{"format": "dex-agents-session-export", "version": 3}').failure().message


def test_json_differences_are_found_at_their_path() -> None:
    assert first_json_difference({"a": [1, 2]}, {"a": [1, 2, 3]}, "$") == ("$.a[2]", None, 3)
    assert first_json_difference({"a": 1}, {"a": True}, "$") == ("$.a", 1, True)
    assert first_json_difference({"a": {"b": None}}, {"a": {"b": None}}, "$") is None


# stored_values


def test_writes_are_staged_by_key_last_one_winning_and_applied_as_dex_commits_them() -> None:
    state = AgentState(status=AgentStatus.WAITING_FOR_USER_MESSAGE, turn_count=0, current_turn_id=None,
                       current_turn_sequence=None, message_count=0, completed_turn_count=0, failed_turn_count=0,
                       last_turn_error=None)
    writes = stored_writes([SetAttribute.of(FRAMEWORK_RUN_STATE, "a"), SetAttribute.of(FRAMEWORK_RUN_STATE, "b"),
                            DeleteAttribute.of(AGENT_STATE), SetAttribute.of(AGENT_STATE, state),
                            DeleteMapInstance.of(AGENT_TOOL_CALLS, "c1"), object()])
    assert writes[("FrameworkRunState", None)] == "b" and writes[("AgentToolCalls", "c1")] is None
    applied = apply_writes({("AgentToolCalls", "c1"): freeze({"x": 1}), ("Other", None): 5}, writes)
    assert ("AgentToolCalls", "c1") not in applied and applied[("Other", None)] == 5
    assert decode_stored("AgentState", applied[("AgentState", None)]).unwrap() == state
    assert same_json(freeze({"a": [1]}), freeze({"a": [1]})) and not same_json(freeze(1), freeze(True))
    with pytest.raises(TypeError, match="cannot hold"):
        value_json("FrameworkRunState", 1.5)
    with pytest.raises(ValueError):
        freeze(float("nan"))


def test_stored_values_that_cannot_be_read_are_named() -> None:
    assert "not a persisted name" in decode_stored("Nope", 1).failure()
    assert "holds a int, got str" in decode_stored("TurnModelCallCount", "3").failure()
    assert "cannot decode AgentState" in decode_stored("AgentState", freeze({})).failure()
    broken: dict[StoredKey, JsonValue] = {("AgentMessages", "000000000001"): freeze({"sequence": "one"})}
    assert "stored AgentMessages/000000000001 cannot be decoded" in state_from_values(broken, 0).failure()
    assert state_from_values({}, 2).unwrap().queued_message_count == 2


# invocation_record


def test_the_invocation_record_holds_each_inputs_clock_and_the_options() -> None:
    config = SessionConfig(interrupt_deadline_ms=5, max_model_calls_per_turn=3)
    record = invocation_record([1, 2], config)
    assert record == InvocationRecord(now_ms=pvector([1, 2]), interrupt_deadline_ms=5, max_model_calls_per_turn=3)
    assert record.config() == SessionConfig(interrupt_deadline_ms=5, max_model_calls_per_turn=3)
    resolution = ResolveInterruptInput(interrupt_id="turn-1:c", approved=True, rejection_message=None)
    assert clock_of(ResolveInterruptCalled(input=resolution, now_ms=9)) == 9
    assert clock_of(AgentSnapshotRequested()) is None
    assert clock_of(SendUserMessageOnceCalled(input=SendUserMessageOnceInput(message_id="m", text="t"))) is None
    assert clock_of(ModelStepStarted(invocation=invocation(now_ms=11))) == 11
    assert list(record.now_ms) == [1, 2]


def test_the_invocation_record_keeps_what_the_compaction_policy_decides_with() -> None:
    policy = CompactionPolicy(trigger_tokens=900, keep_recent_turns=3, instructions="Keep the order IDs.")
    record = invocation_record([1], SessionConfig(compaction=policy))
    assert record.compaction == RecordedCompaction(reactive=True, trigger_tokens=900, keep_recent_turns=3)
    replayed = record.config().compaction
    assert replayed is not None and (replayed.reactive, replayed.trigger_tokens, replayed.keep_recent_turns) == (
        True, 900, 3)
    # a record written before compaction existed has no such field: the Flow never compacted
    old = decode('{"interrupt_deadline_ms":null,"max_model_calls_per_turn":50,"now_ms":[1]}', InvocationRecord).unwrap()
    assert old.compaction is None and old.config().compaction is None


def test_an_export_with_rewound_runs_renders_them_and_its_replay_names_them() -> None:
    document = golden()
    removed = RewoundRun(run_id="run-before-the-rewind", target_event_id=7, steps=pvector(document.steps[-2:]))
    rewound = dataclasses.replace(document, rewound_runs=pvector([removed]))
    text = render_export(rewound)
    assert '"rewound_runs": [' in text and '"rewound_runs"' not in render_export(document)
    assert read_export(text).unwrap() == rewound
    report = replay_export(rewound).unwrap()
    assert report.identical and report.rewound_run_count == 1
    assert report.describe()[1] == ("  the export also holds 1 run(s) a rewind replaced (rewound_runs): their removed "
                                    "steps are not replayed")
