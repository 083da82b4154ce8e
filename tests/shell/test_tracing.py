"""OpenTelemetry spans (``dex_agents.shell.tracing``): one per attempt of each model call and tool call and
one per turn, with session, turn, tool, effect, attempt and outcome; never again when the session is
read, and none repeated after a Worker SIGKILL and the re-delivery of the killed attempt.

The in-process test reads the SDK's in-memory exporter; the crash test's Worker children write their
spans to a JSON-lines file (``DEX_AGENTS_OTEL_FILE``) the test reads after the turn completed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dex_agents.shell import tracing
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory, KillableWorkerFactory
from tests.shell.agents import (
    LOOKUP_MESSAGE,
    LOOKUP_THEN_GATED_MODEL_MESSAGE,
    MODEL_BEFORE_OUTPUT_GATE,
    WORKER_MODULE,
    build_support_flow,
    unique_flow_type,
)
from tests.shell.crashes import CrashLab, new_session_id

Span = tuple[str, str, int, str]
"""(name, outcome, attempt, tool or "")."""


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracing.enable_tracing(provider)
    try:
        yield spans
    finally:
        tracing.disable_tracing()
        provider.shutdown()


def _summary(name: str, attributes: dict[str, object]) -> Span:
    attempt = attributes["dex_agents.attempt"]
    assert isinstance(attempt, int)
    return (name, str(attributes["dex_agents.outcome"]), attempt, str(attributes.get("dex_agents.tool", "")))


def test_a_turn_emits_one_span_per_model_call_tool_call_and_turn_and_reads_emit_none(
        exporter: InMemorySpanExporter, agent_environment: AgentEnvironmentFactory,
        agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_support_flow(tmp_path / "state", flow_type=unique_flow_type("Traced"))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = new_session_id()
    sessions.start_session(session_id, LOOKUP_MESSAGE)
    sessions.wait_for_completed_turns(session_id, 1)

    spans = exporter.get_finished_spans()
    assert sorted(_summary(span.name, dict(span.attributes or {})) for span in spans) == [
        ("dex_agents.model_call", "final_answer", 1, ""), ("dex_agents.model_call", "tool_calls", 1, ""),
        ("dex_agents.tool_call", "succeeded", 1, "lookup_order"), ("dex_agents.turn", "completed", 1, "")]
    for span in spans:
        attributes = dict(span.attributes or {})
        assert attributes["dex_agents.session_id"] == session_id and attributes["dex_agents.turn_id"] == "turn-1"
        assert span.context is not None and span.end_time is not None and span.start_time is not None
        assert span.end_time >= span.start_time
    assert len({span.context.trace_id for span in spans if span.context is not None}) == 1  # one trace per turn
    tool = next(span for span in spans if span.name == "dex_agents.tool_call")
    assert dict(tool.attributes or {})["dex_agents.effect"] == "read"

    sessions.snapshot(session_id)  # reads, events: no Step runs, no span
    sessions.events(session_id)
    sessions.list_messages(session_id)
    assert len(exporter.get_finished_spans()) == len(spans)


def test_tracing_off_emits_nothing_and_the_environment_turns_it_on(tmp_path: Path) -> None:
    assert not tracing.tracing_enabled()
    tracing.emit_span("dex_agents.turn", session_id="s", turn_id="turn-1", attempt=1, outcome="completed",
                      failed=False, start_ns=1, end_ns=2)  # a no-op while off
    assert not tracing.enable_tracing_from_environment({})
    assert not tracing.enable_tracing_from_environment({tracing.OTEL_ENV: "0"})
    path = tmp_path / "spans.jsonl"
    try:
        assert tracing.enable_tracing_from_environment({tracing.OTEL_FILE_ENV: str(path)})
        tracing.emit_span("dex_agents.turn", session_id="s", turn_id="turn-1", attempt=2, outcome="failed",
                          failed=True, start_ns=1, end_ns=2)
    finally:
        tracing.disable_tracing()
    [line] = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    assert record["name"] == "dex_agents.turn" and record["status"] == "ERROR"
    assert record["attributes"]["dex_agents.attempt"] == 2 and record["attributes"]["dex_agents.outcome"] == "failed"


def test_no_span_repeats_after_a_worker_sigkill_and_recovery(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
        killable_worker: KillableWorkerFactory, tmp_path: Path) -> None:
    """The turn's second model call is held before any output and its Worker SIGKILLed; the next Worker
    runs the re-delivered attempt. Across both Workers: one span per attempt that ran to its outcome,
    the first model call and the lookup once each (not again on the second Worker), the killed attempt
    none, and one turn span."""
    spans_file = tmp_path / "spans.jsonl"
    lab = CrashLab.open(agent_environment, agent_sessions, killable_worker, tmp_path)
    child_environment = {"TEST_STATE_DIR": str(lab.state_directory), "TEST_FLOW_TYPE": lab.flow_type,
                         tracing.OTEL_FILE_ENV: str(spans_file)}
    lab = dataclasses.replace(lab, start_child=lambda: killable_worker(WORKER_MODULE, environment=child_environment))
    worker = lab.start_worker()
    session_id = new_session_id()
    gate = lab.gate(MODEL_BEFORE_OUTPUT_GATE)

    lab.sessions.start_session(session_id, LOOKUP_THEN_GATED_MODEL_MESSAGE)
    gate.wait_until_reached()
    before_kill = [json.loads(line) for line in spans_file.read_text(encoding="utf-8").splitlines()]
    assert sorted(_summary(r["name"], r["attributes"]) for r in before_kill) == [
        ("dex_agents.model_call", "tool_calls", 1, ""), ("dex_agents.tool_call", "succeeded", 1, "lookup_order")]
    lab.kill_at(worker, gate)
    lab.sessions.wait_for_completed_turns(session_id, 1)

    records = [json.loads(line) for line in spans_file.read_text(encoding="utf-8").splitlines()]
    assert sorted(_summary(r["name"], r["attributes"]) for r in records) == [
        ("dex_agents.model_call", "final_answer", 1, ""), ("dex_agents.model_call", "tool_calls", 1, ""),
        ("dex_agents.tool_call", "succeeded", 1, "lookup_order"), ("dex_agents.turn", "completed", 1, "")]
    assert {r["attributes"]["dex_agents.session_id"] for r in records} == {session_id}
    assert len({r["trace_id"] for r in records}) == 1
