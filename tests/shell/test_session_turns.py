"""Turns of a session on an in-process Worker, checked in Step history and in committed values: a read
tool turn, history replay, parallel tool Steps, a message sent during a turn, and live text grouped by
attempt. Every wait is on committed values (never on elapsed time)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dex_agents.pure.values.runner import AgentTurnOutcome
from dex_agents.pure.values.session import AgentUsage, AgentStatus, MessageRole
from dex_agents.shell import AgentTurnContext, DeferredToolExecution, ToolExecutionError
from dex_agents.testing import FileGate, ScriptedModelCall, ScriptedTool
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.scenario_flows import (
    READ_POLICY,
    RecordingRunner,
    answer_tool,
    assert_payload_keys,
    call,
    completed_executions,
    completed_steps,
    live_text,
    new_session_id,
    of_type,
    scripted_runner,
    session_flow,
    step_inputs,
    tool_log,
    user_text_of,
    without_deltas,
)

LOOKUP_MESSAGE = "Where is order 42?"
LOOKUP_ANSWER = "Order 42 ships today."
LOOKUP_SCRIPT = {
    LOOKUP_MESSAGE: (ScriptedModelCall(tool_calls=(call("call-lookup", "lookup_order", order_id=42),)),
                     ScriptedModelCall(text=LOOKUP_ANSWER)),
}
LOOKUP_TOOLS = {"lookup_order": answer_tool("order 42 ships today")}
RENDEZVOUS_SECONDS = 10.0


def test_a_read_tool_turn_runs_model_tool_resume_model(agent_environment: AgentEnvironmentFactory,
                                                       agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = session_flow(scripted_runner(tmp_path, LOOKUP_SCRIPT, LOOKUP_TOOLS), prefix="ReadTurn",
                        tool_policies={"lookup_order": READ_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()

    sessions.start_session(session_id, LOOKUP_MESSAGE)
    state = sessions.wait_for_completed_turns(session_id, 1)

    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RunModel"]
    snapshot = sessions.snapshot(session_id)
    assert [(m.sequence, m.turn_id, m.role) for m in snapshot.messages] == [
        (1, "turn-1", MessageRole.USER), (2, "turn-1", MessageRole.ASSISTANT), (3, "turn-1", MessageRole.TOOL),
        (4, "turn-1", MessageRole.ASSISTANT)]
    user, request, result, answer = snapshot.messages
    assert user.text == LOOKUP_MESSAGE
    assert (request.tool_call_id, request.tool_name, request.tool_arguments, request.text) == (
        "call-lookup", "lookup_order", '{"order_id":42}', None)
    assert (result.tool_call_id, result.tool_output) == ("call-lookup", "order 42 ships today")
    assert answer.text == LOOKUP_ANSWER
    assert snapshot.usage == AgentUsage(requests=2, input_tokens=20, output_tokens=10)
    assert sessions.read_attribute(session_id, flow.agent_usage) == snapshot.usage
    assert snapshot.state == state
    assert (state.status, state.turn_count, state.message_count, state.current_turn_id) == (
        AgentStatus.WAITING_FOR_USER_MESSAGE, 1, 4, None)
    assert (list(snapshot.tool_calls), list(snapshot.pending_interrupts), snapshot.queued_message_count) == ([], [], 0)
    assert tool_log(tmp_path).entries() == [f"lookup_order:{session_id}/turn-1/call-lookup"]

    events = sessions.events(session_id)
    assert_payload_keys(events)
    assert without_deltas(events) == ["turn_started", "usage_recorded", "tool_call_deferred", "tool_call_started",
                                      "tool_call_finished", "text_delta", "usage_recorded", "turn_completed"]
    assert {(event.turn_id, event.attempt) for event in events} == {("turn-1", 1)}
    assert [(event.type, event.step_execution_id) for event in events if event.type != "text_delta"] == [
        ("turn_started", "StartAgentSession-1"), ("usage_recorded", "RunModel-1"),
        ("tool_call_deferred", "RunModel-1"), ("tool_call_started", "CallTool-1"),
        ("tool_call_finished", "CallTool-1"), ("usage_recorded", "RunModel-2"), ("turn_completed", "RunModel-2")]
    started, first_usage, deferred, tool_started, finished, *_rest = (e for e in events if e.type != "text_delta")
    assert started.payload == {"sequence": 1}
    assert deferred.payload == {"tool_call_id": "call-lookup", "tool_name": "lookup_order", "effect": "read",
                                "requires_approval": False}
    assert tool_started.payload == {"tool_call_id": "call-lookup", "tool_name": "lookup_order"}
    assert finished.payload == {"tool_call_id": "call-lookup", "tool_name": "lookup_order", "status": "succeeded"}
    assert first_usage.payload["recorded"] == first_usage.payload["session"]
    last_usage: object = of_type(events, "usage_recorded")[-1].payload["session"]
    assert last_usage == {"requests": 2, "input_tokens": 20, "output_tokens": 10, "cache_read_tokens": 0,
                          "cache_write_tokens": 0}
    assert of_type(events, "turn_completed")[0].payload == {"message_count": 3}  # appended by the final model call
    assert live_text(events, "turn-1") == {"RunModel-2": LOOKUP_ANSWER}


def test_the_next_turn_replays_the_whole_history(agent_environment: AgentEnvironmentFactory,
                                                 agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    runner = RecordingRunner(inner=scripted_runner(tmp_path, LOOKUP_SCRIPT, LOOKUP_TOOLS))
    flow = session_flow(runner, prefix="Replay", tool_policies={"lookup_order": READ_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, LOOKUP_MESSAGE)
    sessions.wait_for_completed_turns(session_id, 1)

    assert sessions.send_user_message(session_id, "Thanks") is True
    sessions.wait_for_completed_turns(session_id, 2)

    messages = sessions.snapshot(session_id).messages
    assert [m.text for m in messages[4:]] == ["Thanks", "echo: Thanks (5 messages)"]
    assert [m.turn_id for m in messages[4:]] == ["turn-2", "turn-2"]
    first_call, resumed_call = runner.calls_of("turn-1")
    assert (first_call.is_resuming, resumed_call.is_resuming) == (False, True)
    assert first_call.framework_items == resumed_call.framework_items == (messages[0].framework_item,)
    [second_turn_call] = runner.calls_of("turn-2")
    assert second_turn_call.framework_items == tuple(m.framework_item for m in messages[:5])
    assert completed_steps(environment.server_address, session_id)[-2:] == ["AwaitUserMessage", "RunModel"]


def rendezvous_tools(names: tuple[str, str]) -> dict[str, ScriptedTool]:
    """Two tools that each wait for the other to have started: both succeed only when they overlap."""
    arrived = {name: asyncio.Event() for name in names}

    def tool(name: str, other: str) -> ScriptedTool:
        async def run(_call: DeferredToolExecution) -> str:
            arrived[name].set()
            try:
                await asyncio.wait_for(arrived[other].wait(), RENDEZVOUS_SECONDS)
            except TimeoutError:
                raise ToolExecutionError(f"{name} ran alone: {other} did not start while it ran") from None
            return f"{name}: in stock"

        return run

    first, second = names
    return {first: tool(first, second), second: tool(second, first)}


def test_the_tool_calls_of_one_response_run_in_parallel_steps(agent_environment: AgentEnvironmentFactory,
                                                             agent_sessions: AgentSessionsFactory,
                                                             tmp_path: Path) -> None:
    script = {"Are both in stock?": (
        ScriptedModelCall(tool_calls=(call("call-a", "stock_a"), call("call-b", "stock_b"))),
        ScriptedModelCall(text="Both are in stock."))}
    runner = scripted_runner(tmp_path, script, rendezvous_tools(("stock_a", "stock_b")))
    flow = session_flow(runner, prefix="Parallel", tool_policies={"stock_a": READ_POLICY, "stock_b": READ_POLICY})
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()

    sessions.start_session(session_id, "Are both in stock?")
    sessions.wait_for_completed_turns(session_id, 1)

    messages = sessions.snapshot(session_id).messages
    assert [(m.tool_call_id, m.tool_output) for m in messages if m.role is MessageRole.TOOL] == [
        ("call-a", "stock_a: in stock"), ("call-b", "stock_b: in stock")]
    steps = completed_steps(environment.server_address, session_id)
    assert steps == ["StartAgentSession", "RunModel", "CallTool", "CallTool", "ResumeTurn", "RunModel"]
    inputs = step_inputs(environment.server_address, session_id)
    assert {inputs["CallTool-1"].string_value, inputs["CallTool-2"].string_value} == {"call-a", "call-b"}
    assert inputs["ResumeTurn-1"].int_value == 2
    tool_events = [(event.type, event.payload["tool_call_id"]) for event in sessions.events(session_id)
                   if event.type.startswith("tool_call_")]
    assert [kind for kind, _ in tool_events[:2]] == ["tool_call_deferred", "tool_call_deferred"]
    for call_id in ("call-a", "call-b"):  # the two Steps' events interleave in any order, each call's in its own
        assert [kind for kind, of in tool_events if of == call_id] == [
            "tool_call_deferred", "tool_call_started", "tool_call_finished"]
    assert len(tool_log(tmp_path).entries()) == 2


def test_a_message_sent_during_a_turn_is_queued_for_the_next_turn(agent_environment: AgentEnvironmentFactory,
                                                                  agent_sessions: AgentSessionsFactory,
                                                                  tmp_path: Path) -> None:
    script = {"Take your time.": (ScriptedModelCall(text="Done.", gate_before_output="slow-model"),)}
    flow = session_flow(scripted_runner(tmp_path, script), prefix="Queued")
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    gate = FileGate(tmp_path, "slow-model")

    sessions.start_session(session_id, "Take your time.")
    gate.wait_until_reached()
    assert sessions.send_user_message(session_id, "And then?") is True
    assert sessions.send_user_message(session_id, " \t\n") is False
    during = sessions.snapshot(session_id)
    assert during.queued_message_count == 1
    assert during.state is not None and during.state.current_turn_id == "turn-1"
    assert during.state.status is AgentStatus.RUNNING_MODEL
    assert [m.text for m in during.messages] == ["Take your time."]
    gate.release()

    state = sessions.wait_for_completed_turns(session_id, 2)
    after = sessions.snapshot(session_id)
    assert [(m.turn_id, m.text) for m in after.messages] == [
        ("turn-1", "Take your time."), ("turn-1", "Done."), ("turn-2", "And then?"),
        ("turn-2", "echo: And then? (3 messages)")]
    assert (after.queued_message_count, state.turn_count) == (0, 2)
    assert completed_steps(environment.server_address, session_id) == [
        "StartAgentSession", "RunModel", "AwaitUserMessage", "RunModel"]
    assert [e.payload for e in of_type(sessions.events(session_id), "turn_started")] == [
        {"sequence": 1}, {"sequence": 3}]


STREAM_MESSAGE = "Stream, then drop the connection."
FINAL_ANSWER = "The final answer."
PARTIAL_TEXT = "A partial answer that"


def test_live_text_of_a_rerun_model_call_groups_by_attempt(agent_environment: AgentEnvironmentFactory,
                                                           agent_sessions: AgentSessionsFactory,
                                                           tmp_path: Path) -> None:
    """The first attempt streams text, then fails; Dex reruns the model call after its 1 s back-off."""

    async def fail_after_output(turn: AgentTurnContext) -> AgentTurnOutcome | None:
        if user_text_of(turn) == STREAM_MESSAGE and turn.attempt == 1:
            turn.events.write_text_delta(PARTIAL_TEXT)
            raise RuntimeError("the model connection dropped")
        return None

    runner = RecordingRunner(inner=scripted_runner(tmp_path, {STREAM_MESSAGE: (ScriptedModelCall(text=FINAL_ANSWER),)}),
                             before_model=fail_after_output)
    flow = session_flow(runner, prefix="Attempts")
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()

    sessions.start_session(session_id, STREAM_MESSAGE)
    sessions.wait_for_completed_turns(session_id, 1)

    stored_answer = sessions.snapshot(session_id).messages[-1].text
    assert stored_answer == FINAL_ANSWER
    events = sessions.events(session_id)
    deltas = of_type(events, "text_delta")
    assert [(e.step_execution_id, e.attempt) for e in deltas] == [("RunModel-1", 1), ("RunModel-1", 2)]
    assert "".join(str(e.payload["text"]) for e in deltas) == PARTIAL_TEXT + FINAL_ANSWER
    assert live_text(events, "turn-1") == {"RunModel-1": stored_answer}
    assert [(e.step_execution_id, e.attempt) for e in of_type(events, "usage_recorded")] == [("RunModel-1", 2)]
    assert sessions.snapshot(session_id).usage == AgentUsage(requests=1, input_tokens=10, output_tokens=5)
    run_model = [entry for entry in completed_executions(environment.server_address, session_id)
                 if entry.step_type == "RunModel"]
    assert [(entry.step_execution_id, entry.attempt) for entry in run_model] == [("RunModel-1", 2)]
    assert [seen.attempt for seen in runner.calls_of("turn-1")] == [1, 2]
