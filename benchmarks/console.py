"""The session console's speed: the sessions list, a long session's page, streamed text to the browser.

Prints figures, asserts none. On a local engine (child process, fsync per commit) with an in-process
Worker and the console as deployed: ``dex-agents console --no-auth`` in a process of its own, on loopback:

* the list: ``GET /api/sessions?limit=N`` over N sessions (one ``GetAttributes`` per row: its state,
  approvals and usage), the same with ``include=last_activity`` (a second read per row: its latest
  event), and the list page's fragment ``GET /ui/sessions`` (its first page of 50, with last activity);
* a session of M messages: ``GET /api/sessions/{id}`` (snapshot, events, transcript) and its page
  fragment ``GET /ui/sessions/{id}``;
* streamed text: a model streams K chunks, 300 ms apart, each carrying its write time (wall clock, ms);
  headless Chromium on the session page records when its event handler got each one. The latency
  includes the events writer's coalescing (up to 100 ms), the Stream's long poll, SSE and the page's parser.

Usage: ``python -m benchmarks.console [--sessions 1000] [--messages 500] [--chunks 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence

import httpx
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from dex_agents.adapters.pydantic_ai import create_pydantic_ai_session_flow
from dex_agents.shell import create_agent_session_flow
from dex_agents.testing import ScriptedAgentRunner
from dex_agents.testing.environment import AgentTestEnvironment
from dex_agents.testing.ports import find_free_loopback_ports
from dex_agents.testing.private_engine import PrivateDexEngine
from tests.console.browser import chromium, laptop_page

STREAM_MESSAGE = "stream please"
CHUNK = re.compile(r"<(\d+\.\d)>")


def timed(call: Callable[[], httpx.Response], runs: int = 5) -> tuple[float, float]:
    """(p50, max) milliseconds of ``runs`` calls (each must answer 200)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        answer = call()
        times.append((time.perf_counter() - started) * 1000)
        answer.raise_for_status()
    return statistics.median(times), max(times)


def streaming_flow(flow_type: str, chunks: int) -> object:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        for _ in range(chunks):
            await asyncio.sleep(0.3)  # apart, so the events writer flushes each chunk on its own
            yield f" <{time.time() * 1000:.1f}>"

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("unused")])

    return create_pydantic_ai_session_flow(Agent(FunctionModel(answer, stream_function=stream)), flow_type)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000, help="sessions in the list (default 1000)")
    parser.add_argument("--messages", type=int, default=500, help="messages of the long session (default 500)")
    parser.add_argument("--chunks", type=int, default=20, help="streamed chunks timed (default 20)")
    options = parser.parse_args(argv)
    tag = uuid.uuid4().hex[:8]
    echo = create_agent_session_flow(ScriptedAgentRunner(), f"ConsoleBench-{tag}")
    streaming = streaming_flow(f"ConsoleStream-{tag}", options.chunks)
    engine = PrivateDexEngine.start()
    try:
        with AgentTestEnvironment.start(server_address=engine.server_address, flows=[echo, streaming]) as environment:  # type: ignore[list-item]
            sessions = environment.sessions(echo, timeout=600.0)
            _measure(options, engine.server_address, sessions, environment, streaming, echo.get_flow_type())
    finally:
        engine.stop()


def _measure(options: argparse.Namespace, address: str, sessions: object, environment: AgentTestEnvironment,
             streaming: object, flow_type: str) -> None:
    from dex_agents.testing.session_client import AgentSessionTestClient

    assert isinstance(sessions, AgentSessionTestClient)
    for number in range(options.sessions - 1):  # and the long session: that many of the Flow type
        sessions.start_session(f"list-{number:05d}")
    turns = options.messages // 2
    sessions.start_session("long", "message 0")
    for number in range(1, turns):
        sessions.send_user_message("long", f"message {number}")
    sessions.wait_for_completed_turns("long", turns)
    with console_process(address) as url:
        with httpx.Client(base_url=url, timeout=60.0) as http:
            http.get("/api/sessions?limit=1").raise_for_status()  # the clients are made once
            count = len(http.get(f"/api/sessions?flow_type={flow_type}&limit={options.sessions}").json()["sessions"])
            p50, worst = timed(lambda: http.get(f"/api/sessions?flow_type={flow_type}&limit={options.sessions}"))
            print(f"list API, {count} sessions in one answer: p50={p50:.0f} ms max={worst:.0f} ms (target < 1000 ms)")
            p50, worst = timed(lambda: http.get(f"/api/sessions?flow_type={flow_type}&limit={options.sessions}"
                                                f"&include=last_activity"))
            print(f"list API with last activity, {count} sessions in one answer: p50={p50:.0f} ms max={worst:.0f} ms")
            p50, worst = timed(lambda: http.get(f"/api/sessions?flow_type={flow_type}&limit=50"))
            print(f"list API, first page of 50 of {count} sessions: p50={p50:.0f} ms max={worst:.0f} ms")
            p50, worst = timed(lambda: http.get(f"/ui/sessions?flow_type={flow_type}"))
            print(f"list page fragment (first 50 of {count}): p50={p50:.0f} ms max={worst:.0f} ms")
            messages = len(http.get("/api/sessions/long").json()["transcript"])
            p50, worst = timed(lambda: http.get("/api/sessions/long"))
            print(f"session API, {messages} messages: p50={p50:.0f} ms max={worst:.0f} ms (target < 1000 ms)")
            p50, worst = timed(lambda: http.get("/ui/sessions/long"))
            print(f"session page fragment, {messages} messages: p50={p50:.0f} ms max={worst:.0f} ms (target < 1000 ms)")
        _stream_latency(options.chunks, url, environment, streaming)


@contextlib.contextmanager
def console_process(address: str) -> Iterator[str]:
    """``dex-agents console`` serving ``address`` from a child process; yields its URL once it answers."""
    (port,) = find_free_loopback_ports(1)
    child = subprocess.Popen([sys.executable, "-m", "dex_agents.cli", "console", "--server", address, "--no-auth",
                              "--port", str(port)], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url, timeout=1.0).raise_for_status()
                break
            except httpx.TransportError:
                if child.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the console did not start serving") from None
                time.sleep(0.1)
        yield url
    finally:
        child.terminate()
        child.wait(timeout=10)


def _stream_latency(chunks: int, url: str, environment: AgentTestEnvironment, streaming: object) -> None:
    from dex_agents.shell.flow import AgentSessionFlow

    assert isinstance(streaming, AgentSessionFlow)
    sessions = environment.sessions(streaming, timeout=120.0)
    try:
        sessions.start_session("stream")
        sessions.wait_for_turns("stream", 0)
        with chromium() as browser, laptop_page(browser) as page:
            page.goto(f"{url}sessions/stream")
            page.wait_for_selector(".session-head")
            page.evaluate("""window.__latencies = [];
              window.__onConsoleEvent = (event) => {
                if (event.type !== 'text_delta') return;
                const now = Date.now();
                for (const match of event.payload.text.matchAll(/<(\\d+\\.\\d)>/g)) window.__latencies.push(now - Number(match[1]));
              };
              true;""")
            sessions.send_user_message("stream", STREAM_MESSAGE)
            page.wait_for_function(f"window.__latencies.length >= {chunks}", timeout=60_000)
            latencies = [float(value) for value in page.evaluate("window.__latencies")]
        print(f"streamed chunk to the page's event handler, {len(latencies)} chunks: "
              f"p50={statistics.median(latencies):.0f} ms max={max(latencies):.0f} ms (target p50 < 200 ms)")
    finally:
        sessions.close()


if __name__ == "__main__":
    main()
