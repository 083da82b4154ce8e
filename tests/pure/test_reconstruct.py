"""``reconstruct``: the inputs rebuilt from a session's history reproduce its state, through every
request the Steps answer from their writes (user messages, model outcomes, heartbeats, tool runs),
failure routes (recovery errors from the failed Step's history), RPCs and the approval wait; and
what cannot be rebuilt is named in a note."""

from __future__ import annotations

import dataclasses

from pyrsistent import pvector

from dex_agents.pure.machine.reducers import SKIPPED
from dex_agents.pure.machine.rpc_calls import SendUserMessageCalled
from dex_agents.pure.machine.step_inputs import SubAgentEnded, SubAgentWaitStarted
from dex_agents.pure.offline.export_document import ChannelMessages, HistoryStep, StoredValue, SubFlowOutcome
from dex_agents.pure.values.session import AgentUsage, SubAgentResult
from dex_agents.pure.wire import encode
from dex_agents.pure.offline.history_answers import PLACEHOLDER_CALL_ID
from dex_agents.pure.offline.input_wire import input_to_data
from dex_agents.pure.offline.reconstruct import CLOCK_HISTORY, CLOCK_MIXED, CLOCK_NONE, CLOCK_RECORDED, reconstruct_inputs
from dex_agents.pure.offline.replay import replay
from dex_agents.pure.values.rpc import SendUserMessageInput
from dex_agents.pure.machine.state import SessionConfig
from dex_agents.pure.machine.step_inputs import ModelCallFailed, ModelCallFinished
from dex_agents.pure.offline.stored_values import freeze
from dex_agents.pure.values.runner import ToolCallsRequested
from dex_agents.pure.values.session import ToolEffect
from dex_agents.pure.wire import to_json_data, record_type
from dex_agents.pure.values.session import AgentSessionStartInput
from tests.pure.history_support import HistoryRecorder
from tests.pure.scenario_support import FLOW_ID, Session, completed, invocation, requested, tool_call

DAY_MS = 86_400_000


def _start(recorder: HistoryRecorder, text: str) -> None:
    start_input = to_json_data(AgentSessionStartInput(initial_message=text), record_type(AgentSessionStartInput))
    recorder.step("StartAgentSession", start_input, lambda: recorder.session.start(text))


def _turn(recorder: HistoryRecorder, text: str) -> None:
    session = recorder.session
    recorder.rpc("send_user_message", {"text": text}, lambda: session.send(text))
    consumed = ChannelMessages(name="QueuedUserMessages", instance=None,
                               values=pvector([freeze({"text": text})]))
    recorder.step("AwaitUserMessage", None, lambda: session.user_message_arrives(text), consumed=[consumed])


def _tool(recorder: HistoryRecorder, call_id: str, step_type: str, output: str = "ok") -> None:
    session = recorder.session

    def run() -> None:
        session.tool_started(call_id)
        session.tool_succeeds(call_id, output)

    recorder.step(step_type, call_id, run)


def test_a_session_with_tools_an_approval_a_cap_and_a_non_retryable_failure_is_rebuilt() -> None:
    config = SessionConfig(interrupt_deadline_ms=DAY_MS, max_model_calls_per_turn=2)
    session = Session(config=config)
    recorder = HistoryRecorder(session)
    _start(recorder, "Where is order 42?")
    recorder.step("RunModel", None, lambda: session.model(requested(tool_call("r", ToolEffect.READ),
                                                                    tool_call("w", ToolEffect.NON_IDEMPOTENT_WRITE))))
    _tool(recorder, "r", "CallTool", "order 42 ships")
    recorder.step("AwaitToolApproval", "w", lambda: session.wait_for("w"), method="wait_for")
    recorder.rpc("resolve_interrupt", {"interrupt_id": "turn-1:w", "approved": True, "rejection_message": None},
                 lambda: session.resolve("turn-1:w", True))
    resolution = freeze({"interrupt_id": "turn-1:w", "approved": True, "rejection_message": None})
    recorder.step("AwaitToolApproval", "w", lambda: session.approval("w", resolutions=[session.resolution_of("w", True)]),
                  consumed=[ChannelMessages(name="InterruptResolutions", instance="turn-1:w", values=pvector([resolution]))])
    _tool(recorder, "w", "CallSingleAttemptTool", "written")
    recorder.step("ResumeTurn", 2, lambda: session.results_arrive(2))
    recorder.step("RunModel", None, lambda: session.model(requested(tool_call("again", ToolEffect.READ))))  # the cap
    _turn(recorder, "and now?")
    recorder.step("RunModel", None, lambda: session.model_fails("refused by the provider", retryable=False))
    _turn(recorder, "thanks")
    recorder.step("RunModel", None, lambda: session.model(completed("you are welcome")))

    rebuilt = reconstruct_inputs(FLOW_ID, recorder.steps)
    assert replay([item.input for item in rebuilt.inputs], config) == session.state
    assert rebuilt.clock == CLOCK_RECORDED
    assert len(rebuilt.notes) == 1 and PLACEHOLDER_CALL_ID in rebuilt.notes[0]
    capped = [item.input for item in rebuilt.inputs if isinstance(item.input, ModelCallFinished)
              and isinstance(item.input.outcome, ToolCallsRequested)][-1]
    assert isinstance(capped.outcome, ToolCallsRequested)
    assert capped.outcome.tool_calls[0].tool_call_id == PLACEHOLDER_CALL_ID
    failed = [item.input for item in rebuilt.inputs if isinstance(item.input, ModelCallFailed)]
    assert failed == [ModelCallFailed(invocation=failed[0].invocation, error="refused by the provider", retryable=False)]
    assert session.state.agent_state is not None and session.state.agent_state.failed_turn_count == 2


def test_a_sub_agent_call_is_rebuilt_from_its_subflow_result() -> None:
    """``AwaitSubAgent``'s wait and its ``execute``, whose input is the SubFlow result the export
    holds (the child's ``SubAgentResult`` JSON); a skipped wait (no SubFlow) fails the call."""
    session = Session()
    recorder = HistoryRecorder(session)
    _start(recorder, "Refund order 17")
    calls = [tool_call(call_id, ToolEffect.NON_IDEMPOTENT_WRITE, tool_name="ask_billing", arguments=arguments,
                       requires_approval=False) for call_id, arguments in (("b", '{"task":"refund 17"}'), ("n", "{}"))]
    recorder.step("RunModel", None, lambda: session.model(requested(
        *(dataclasses.replace(call, policy=dataclasses.replace(call.policy, sub_agent="billing")) for call in calls))))
    result = SubAgentResult(status="completed", text="refunded", usage=AgentUsage(requests=2, input_tokens=9))
    for call_id in ("b", "n"):
        recorder.step("AwaitSubAgent", call_id, lambda c=call_id: session.feed_wait(  # type: ignore[misc]
            SubAgentWaitStarted(invocation=session.inv(), tool_call_id=c)), method="wait_for")
    step_id = session.inv().step_execution_id
    recorder.step("AwaitSubAgent", "b", lambda: session.run_step(SubAgentEnded(
        invocation=invocation(step=step_id), tool_call_id="b", child_session_id=f"SubFlow:{FLOW_ID}-{step_id}-0",
        child_status="COMPLETED", result=result)), sub_flows=[SubFlowOutcome(status="COMPLETED", output=encode(result))])
    recorder.step("AwaitSubAgent", "n", lambda: session.run_step(SubAgentEnded(
        invocation=session.inv(), tool_call_id="n", child_session_id=None, child_status=SKIPPED, result=None)))
    recorder.step("ResumeTurn", 2, lambda: session.results_arrive(2))
    recorder.step("RunModel", None, lambda: session.model(completed("done")))

    rebuilt = reconstruct_inputs(FLOW_ID, recorder.steps)
    assert replay([item.input for item in rebuilt.inputs]) == session.state
    assert session.state.usage.requests == 2 + 2 and list(rebuilt.notes) == []


def test_failure_routes_take_the_recovery_error_from_the_failed_step() -> None:
    session = Session()
    recorder = HistoryRecorder(session)
    _start(recorder, "go")
    recorder.step("RunModel", None, lambda: session.model(requested(tool_call("r", ToolEffect.READ),
                                                                    tool_call("u", ToolEffect.UNCLASSIFIED,
                                                                              requires_approval=False))))
    recorder.failed("CallTool", "CallTool-1", "lookup timed out")
    recorder.step("RecordToolFailure", "r", lambda: session.attempts_exhausted("r", "lookup timed out"),
                  from_step="CallTool-1")
    recorder.failed("CallSingleAttemptTool", "CallSingleAttemptTool-1", "worker lost")
    recorder.step("RecordToolOutcomeUnknown", "u", lambda: session.single_attempt_failed("u", "worker lost"),
                  from_step="CallSingleAttemptTool-1")
    recorder.step("ResumeTurn", 2, lambda: session.results_arrive(2))
    recorder.failed("RunModel", "RunModel-2", "model down")
    recorder.step("RecordTurnFailure", None, lambda: session.turn_fails("model down"), from_step="RunModel-2")

    rebuilt = reconstruct_inputs(FLOW_ID, recorder.steps)
    assert replay([item.input for item in rebuilt.inputs]) == session.state
    assert rebuilt.notes == pvector()
    assert session.state.messages[-1].text is not None and "lookup timed out" in session.state.messages[-1].text


def test_without_invocation_records_the_event_time_stands_in_for_the_clock() -> None:
    session = Session()
    recorder = HistoryRecorder(session)
    recorder.step("StartAgentSession", {"initial_message": None}, lambda: session.start(None), recorded=False)
    _turn(recorder, "hello")
    rebuilt = reconstruct_inputs(FLOW_ID, recorder.steps[:1])
    assert rebuilt.clock == CLOCK_HISTORY and "server's event time" in rebuilt.notes[-1]
    assert reconstruct_inputs(FLOW_ID, recorder.steps).clock == CLOCK_MIXED
    assert reconstruct_inputs(FLOW_ID, []).clock == CLOCK_NONE
    untimed = dataclasses.replace(recorder.steps[0], time="not a time")
    assert reconstruct_inputs(FLOW_ID, [untimed]).inputs[0].input.invocation.now_ms == 0  # type: ignore[union-attr]


def _broken(step: HistoryStep) -> str:
    rebuilt = reconstruct_inputs(FLOW_ID, [step])
    assert len(rebuilt.notes) >= 1, rebuilt
    return rebuilt.notes[0]


def test_what_cannot_be_rebuilt_is_named_and_the_next_steps_go_on() -> None:
    session = Session()
    recorder = HistoryRecorder(session)
    _start(recorder, "hi")
    start = recorder.steps[0]
    assert "stored no AgentMessages/000000000001" in _broken(dataclasses.replace(start, writes=pvector()))
    assert reconstruct_inputs(FLOW_ID, [dataclasses.replace(start, writes=pvector())]).inputs == pvector()
    assert "not a session Step type" in _broken(dataclasses.replace(start, step_type="Mystery"))
    assert "is not a AgentSessionStartInput" in _broken(dataclasses.replace(start, input=freeze([1])))
    assert "not one that changes a session" in _broken(dataclasses.replace(start, method="rpc", rpc_name="get_agent_snapshot"))
    bad_write = StoredValue(name="AgentState", instance=None, value=freeze({"status": "dancing"}))
    assert "its write of AgentState" in _broken(dataclasses.replace(start, writes=pvector([bad_write])))
    tool_step = dataclasses.replace(start, step_type="CallTool", input=7)
    assert "tool call ID is not a string" in _broken(tool_step)
    resume = dataclasses.replace(start, step_type="ResumeTurn", input="two")
    assert "not a result count" in _broken(resume)
    rejected = reconstruct_inputs(FLOW_ID, [start, start])  # a second start: the reducers reject it
    assert "the reducers reject SessionStarted" in rejected.notes[0]
    assert len(rejected.inputs) == 3


def test_model_calls_whose_writes_show_no_outcome_are_named() -> None:
    session = Session()
    recorder = HistoryRecorder(session)
    _start(recorder, "hi")
    recorder.step("RunModel", None, lambda: session.model(completed("hello")))
    start, model = recorder.steps
    no_state = dataclasses.replace(model, writes=pvector(w for w in model.writes if w.name != "AgentState"))
    assert "stored neither tool calls nor the turn's end" in reconstruct_inputs(FLOW_ID, [start, no_state]).notes[0]
    same_state = dataclasses.replace(model, writes=pvector(
        w if w.name != "AgentState" else dataclasses.replace(w, value=start.writes[-1].value) for w in model.writes))
    assert "show no outcome" in reconstruct_inputs(FLOW_ID, [start, same_state]).notes[0]


def test_tool_runs_without_a_final_record_are_named_and_a_failed_tool_is_rebuilt() -> None:
    session = Session()
    recorder = HistoryRecorder(session)
    _start(recorder, "hi")
    recorder.step("RunModel", None, lambda: session.model(requested(tool_call("r", ToolEffect.READ))))

    def run() -> None:
        session.tool_started("r")
        session.tool_raises_execution_error("r", "no such order")

    recorder.step("CallTool", "r", run)
    rebuilt = reconstruct_inputs(FLOW_ID, recorder.steps)
    assert replay([item.input for item in rebuilt.inputs]) == session.state
    tool = recorder.steps[-1]
    assert "stored no succeeded or failed record" in reconstruct_inputs(
        FLOW_ID, [*recorder.steps[:-1], dataclasses.replace(tool, writes=pvector())]).notes[0]


def test_rpc_calls_are_rebuilt_and_one_that_changed_nothing_gives_no_input() -> None:
    session = Session()
    recorder = HistoryRecorder(session)
    recorder.step("StartAgentSession", {"initial_message": None}, lambda: session.start(None))
    recorder.rpc("send_user_message", {"text": "one"}, lambda: session.send("one"))
    recorder.rpc("resolve_interrupt", {"interrupt_id": "turn-1:x", "approved": True, "rejection_message": None},
                 lambda: session.resolve("turn-1:x", True))  # not pending: false, nothing written
    rebuilt = reconstruct_inputs(FLOW_ID, recorder.steps)
    assert [input_to_data(item.input)["kind"] for item in rebuilt.inputs] == [
        "session_started", "send_user_message_called"]
    assert rebuilt.inputs[1].input == SendUserMessageCalled(input=SendUserMessageInput(text="one"))
    assert rebuilt.inputs[1].step == 1 and recorder.steps[2].writes == pvector()
