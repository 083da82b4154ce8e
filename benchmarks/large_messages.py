"""A session with megabytes of history: five (``--messages``) 1 MB user messages, then short turns.

Run: ``python -m benchmarks.large_messages``. Prints figures, never asserts.

The agent is Pydantic AI with a ``FunctionModel`` that answers at once (the turn is all durability). The
engine runs in this process, instrumented as in ``benchmarks.turn_profile``, so each turn's frames and
bytes between engine and Worker are counted. Printed per turn: its wall time (``send_user_message``
until the turn's ``RunModel`` committed), the bytes sent to and received from the Worker, and the bytes
of ``LoadBlobs`` answers (large values go to the Worker by reference and are loaded once); then the
time of a snapshot (all of the history) and of paging through every message two at a time, from a
warm Worker and from one that lost its cache of committed messages (a restart).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Final

from benchmarks.turn_profile import COUNTS, install_engine_counters

MEGABYTE: Final = 1_000_000


def big_text(number: int) -> str:
    return f"message {number}: " + chr(ord("a") + number % 26) * (MEGABYTE - 12)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=5, help="1 MB messages (default 5)")
    parser.add_argument("--short-turns", type=int, default=3, help="short turns after them (default 3)")
    args = parser.parse_args(argv)

    from dex import StepExecutionId, WaitForStepCompletionOptions
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from dex_agents import AgentSessionStartInput, ListAgentMessagesInput, SendUserMessageInput
    from dex_agents.adapters.pydantic_ai import create_pydantic_ai_session_flow
    from dex_agents.engine import blobs as engine_blobs
    from dex_agents.engine import start_engine
    from dex_agents.testing import AgentTestEnvironment

    install_engine_counters()
    original_load = engine_blobs.Blobs.load

    def counted_load(self: Any, flow_id: str, blob: Any) -> Any:
        value = original_load(self, flow_id, blob)
        if value is not None:
            COUNTS.add("LoadBlobs bytes", value.ByteSize())
        return value

    engine_blobs.Blobs.load = counted_load  # type: ignore[method-assign]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(f"read {len(messages)} messages")])

    flow = create_pydantic_ai_session_flow(Agent(FunctionModel(model)), "LargeMessagesBench")
    print(f"Python {sys.version.split()[0]}; {os.cpu_count()} CPUs; load "
          f"{' '.join(f'{value:.2f}' for value in os.getloadavg())}; engine in this process (power-loss)")
    wait = WaitForStepCompletionOptions(request_timeout=timedelta(seconds=120))
    with start_engine() as engine, AgentTestEnvironment.start(server_address=engine.address, flows=[flow]) as env:
        client = env.client
        session_id = "large-bench"
        client.start_flow(flow, session_id, AgentSessionStartInput(initial_message=None))
        time.sleep(0.2)
        texts = [big_text(number) for number in range(1, args.messages + 1)]
        texts += [f"short {number}" for number in range(args.short_turns)]
        print("turn  text bytes   wall ms   to Worker   from Worker   LoadBlobs")
        for turn, text in enumerate(texts, start=1):
            before = COUNTS.snapshot()
            started = time.perf_counter()
            client.invoke_rpc(flow.send_user_message, session_id, SendUserMessageInput(text=text))
            client.wait_for_step_completion(session_id, StepExecutionId("RunModel", turn), wait)
            elapsed = time.perf_counter() - started
            delta: Counter[str] = COUNTS.snapshot()
            delta.subtract(before)
            print(f"{turn:4d}  {len(text):10d}  {1000 * elapsed:8.1f}  {delta['bytes to Worker']:10d}  "
                  f"{delta['bytes from Worker']:12d}  {delta['LoadBlobs bytes']:10d}")
            time.sleep(0.05)
        for label in ("warm Worker", "Worker without its cache"):
            if label != "warm Worker":
                history = flow.runtime.history
                for key in list(history._runs):
                    history.forget(*key)
            started = time.perf_counter()
            snapshot = client.invoke_rpc(flow.get_agent_snapshot, session_id)
            snapshot_ms = 1000 * (time.perf_counter() - started)
            if label != "warm Worker":
                for key in list(flow.runtime.history._runs):
                    flow.runtime.history.forget(*key)
            started = time.perf_counter()
            pages, before_sequence = 0, None
            while True:
                page = client.invoke_rpc(flow.list_agent_messages, session_id,
                                         ListAgentMessagesInput(before_sequence=before_sequence, limit=2))
                pages += 1
                before_sequence = page.next_before_sequence
                if before_sequence is None:
                    break
            paging_ms = 1000 * (time.perf_counter() - started)
            size = sum(len(m.text or "") + len(m.framework_item) for m in snapshot.messages)
            print(f"{label}: snapshot of {len(snapshot.messages)} messages ({size} characters) in {snapshot_ms:.1f} ms; "
                  f"{pages} pages of 2 in {paging_ms:.1f} ms")


if __name__ == "__main__":
    main()
