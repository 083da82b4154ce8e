"""OpenTelemetry spans of a session's work (the optional ``otel`` extra): one span per attempt of each
model call and tool call, and one per turn, emitted by the Worker that ran the attempt.

Turning it on (off by default):
    * ``enable_tracing()`` in the Worker's process: spans go to OpenTelemetry's global tracer provider
      (the application configures it, e.g. an OTLP exporter), or to ``enable_tracing(provider)``.
    * Or the environment of the Worker process (read when a session Worker is built): ``DEX_AGENTS_OTEL=1``
      is ``enable_tracing()``; ``DEX_AGENTS_OTEL_FILE=PATH`` also installs an SDK provider of its own that
      appends each finished span to ``PATH`` as one JSON line (``opentelemetry-sdk`` needed), for a quick
      look or a test.

Spans (every one carries ``dex_agents.session_id``, ``dex_agents.turn_id``, ``dex_agents.attempt`` and
``dex_agents.outcome``; status ``ERROR`` for an outcome that failed):
    * ``dex_agents.model_call``: one ``run_model_step``; outcome ``tool_calls``, ``final_answer``, ``failed``
      (retried) or ``failed_final`` (not retryable).
    * ``dex_agents.tool_call``: one ``execute_deferred_tool_call``; also ``dex_agents.tool`` (the name),
      ``dex_agents.tool_call_id`` and ``dex_agents.effect`` (read, idempotent_write, ...); outcome
      ``succeeded``, ``failed`` (a ``ToolExecutionError``, shown to the model) or ``error`` (raised: retried).
    * ``dex_agents.turn``: the attempt that ended the turn; outcome ``completed`` or ``failed``.

Invariants:
    * A span is emitted once, when its attempt's outcome is known on the Worker, never when a session
      is read, replayed (``dex-agents replay``), exported or recovered: nothing but a running attempt
      emits one. An attempt killed with its Worker emits nothing; its re-delivery, or the retry, is an
      attempt of its own and emits its own span.
    * The spans of one turn share one trace: its id is derived from the session and turn IDs, so the
      attempts of a turn that moved between Workers still group together (their parent is that trace's
      root span context, which no process emits).
    * Off costs one ``None`` check per model or tool call: nothing of OpenTelemetry is imported until
      tracing is turned on.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

__all__ = ["OTEL_ENV", "OTEL_FILE_ENV", "disable_tracing", "enable_tracing", "enable_tracing_from_environment",
           "emit_span", "tracing_enabled"]

OTEL_ENV: Final = "DEX_AGENTS_OTEL"
OTEL_FILE_ENV: Final = "DEX_AGENTS_OTEL_FILE"
INSTRUMENTATION: Final = "dex_agents"

_tracer: Tracer | None = None


def tracing_enabled() -> bool:
    """Whether spans are emitted (the hot path's one check)."""
    return _tracer is not None


def enable_tracing(provider: TracerProvider | None = None) -> None:
    """Emit spans to ``provider``, or to OpenTelemetry's global tracer provider.

    Raises:
        ImportError: ``opentelemetry-api`` is not installed (``pip install 'dex-agents[otel]'``).
    """
    global _tracer
    from opentelemetry import trace

    _tracer = (provider or trace.get_tracer_provider()).get_tracer(INSTRUMENTATION)


def disable_tracing() -> None:
    """Stop emitting spans."""
    global _tracer
    _tracer = None


def enable_tracing_from_environment(environment: Mapping[str, str] | None = None) -> bool:
    """Turn tracing on as ``DEX_AGENTS_OTEL`` / ``DEX_AGENTS_OTEL_FILE`` ask (see the module docstring);
    returns whether it is on. Tracing already on is left as it is."""
    variables = os.environ if environment is None else environment
    if _tracer is not None:
        return True
    path = variables.get(OTEL_FILE_ENV, "").strip()
    if path:
        enable_tracing(_file_provider(Path(path)))
    elif variables.get(OTEL_ENV, "").strip().lower() in {"1", "true", "yes", "on"}:
        enable_tracing()
    return _tracer is not None


def _ids(session_id: str, turn_id: str | None) -> tuple[int, int]:
    digest = hashlib.sha256(f"{session_id}\0{turn_id or ''}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


def emit_span(name: str, *, session_id: str, turn_id: str | None, attempt: int, outcome: str, failed: bool,
              start_ns: int, end_ns: int, attributes: Mapping[str, str] | None = None) -> None:
    """Emit one finished span of an attempt (a no-op while tracing is off)."""
    tracer = _tracer
    if tracer is None:
        return
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

    trace_id, root_id = _ids(session_id, turn_id)
    root = NonRecordingSpan(SpanContext(trace_id, root_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)))
    span = tracer.start_span(name, context=trace.set_span_in_context(root), start_time=start_ns, attributes={
        "dex_agents.session_id": session_id, "dex_agents.turn_id": turn_id or "", "dex_agents.attempt": attempt,
        "dex_agents.outcome": outcome, **(attributes or {})})
    if failed:
        span.set_status(Status(StatusCode.ERROR, outcome))
    span.end(end_time=end_ns)


def _file_provider(path: Path) -> TracerProvider:
    """An SDK tracer provider that appends each finished span to ``path`` as a JSON line, at once."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    lock = threading.Lock()

    class JsonLinesExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            lines = "".join(json.dumps({"name": span.name, "attributes": dict(span.attributes or {}),
                                        "status": span.status.status_code.name,
                                        "trace_id": f"{span.context.trace_id:032x}" if span.context else "",
                                        "start_ns": span.start_time, "end_ns": span.end_time}) + "\n"
                            for span in spans)
            with lock, path.open("a", encoding="utf-8") as file:
                file.write(lines)
                file.flush()
                os.fsync(file.fileno())
            return SpanExportResult.SUCCESS

    provider = SdkTracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter()))
    return provider

