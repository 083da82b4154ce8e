"""What confirming a single-attempt tool's start through Dex costs per call (issue 25, item 5).

Run: ``python -m benchmarks.single_attempt_cost`` (``--sessions N``; ``--quick`` for a smoke run).
Prints figures, never asserts on them.

The local engine runs as a child process (fsync per commit); this process holds the session Worker
(``session_worker``, in process) and the Client. Each session runs one turn: the model asks for one
``refund`` call (``non_idempotent_write``, no approval: ``CallSingleAttemptTool``), the tool answers at
once, the model answers. Sessions alternate between the product (the Step reads its
``tool_call_started`` event back from Dex before the tool runs: ``shell.start_confirmation``) and the
same Worker with the confirmation skipped (the heartbeat proof alone, as before issue 25). Printed:
the confirmation's own time per call (measured around it on the Worker's event loop), and the turn
from ``start`` to its committed end in both modes (polled every 2 ms, so the turn figures carry that
granularity). Turns without a single-attempt tool never confirm anything.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from benchmarks.engine_roundtrip import load_average, percentile
from dex_agents.engine import start_engine
from dex_agents.pure.values.runner import ToolPolicy
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell import DeferredToolExecution, requests
from dex_agents.shell.flow import create_agent_session_flow
from dex_agents.testing import AgentTestEnvironment, ScriptedAgentRunner, ScriptedModelCall, ScriptedToolCall

MESSAGE: Final = "Refund order 42"
FLOW_TYPE: Final = "SingleAttemptCost"


async def _refund(_call: DeferredToolExecution) -> str:
    return "refunded"


def _flow() -> Any:
    script = {MESSAGE: (ScriptedModelCall(tool_calls=(ScriptedToolCall(tool_call_id="call-refund", tool_name="refund",
                                                                       arguments="{}"),)),
                        ScriptedModelCall(text="Refunded."))}
    runner = ScriptedAgentRunner(script=script, tools={"refund": _refund})
    return create_agent_session_flow(runner, FLOW_TYPE, tool_policies={
        "refund": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False)})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=200, help="sessions in all, half in each mode")
    parser.add_argument("--quick", action="store_true", help="a smoke run of 6 sessions")
    arguments = parser.parse_args(argv)
    count = 6 if arguments.quick else arguments.sessions
    real_confirm: Callable[..., Awaitable[None]] = getattr(requests, "confirm_start")  # noqa: B009
    confirm_ms: list[float] = []

    async def timed(*args: Any, **options: Any) -> None:
        began = time.perf_counter()
        await real_confirm(*args, **options)
        confirm_ms.append((time.perf_counter() - began) * 1000)

    async def skipped(*_args: Any, **_options: Any) -> None:
        return None

    modes: dict[str, Callable[..., Awaitable[None]]] = {"confirmed": timed, "not confirmed": skipped}
    turns: dict[str, list[float]] = {mode: [] for mode in modes}
    flow = _flow()
    try:
        with start_engine(in_process=False) as engine, \
                AgentTestEnvironment.start(server_address=engine.address, flows=[flow]) as environment:
            sessions = environment.sessions(flow).sessions
            sessions.poll_interval = 0.002
            for index in range(count + 2):  # the first two warm up
                mode = list(modes)[index % 2]
                setattr(requests, "confirm_start", modes[mode])  # noqa: B010
                session_id = f"cost-{uuid.uuid4().hex[:12]}"
                began = time.perf_counter()
                sessions.start(session_id, MESSAGE)
                sessions.wait_for_completed_turns(session_id, 1)
                if index >= 2:
                    turns[mode].append((time.perf_counter() - began) * 1000)
    finally:
        setattr(requests, "confirm_start", real_confirm)  # noqa: B010
    measured = confirm_ms[1:] or [0.0]  # the first is the warm-up's
    print(f"single-attempt start confirmation, {count} sessions (half confirmed), local engine child (fsync per commit)")
    print(f"  confirmation per call: n={len(measured)} p50={percentile(measured, 0.5):.2f} ms "
          f"p99={percentile(measured, 0.99):.2f} ms max={max(measured, default=0.0):.2f} ms")
    for mode, figures in turns.items():
        print(f"  turn with one single-attempt call, {mode}: n={len(figures)} p50={percentile(figures or [0.0], 0.5):.2f} ms "
              f"p99={percentile(figures or [0.0], 0.99):.2f} ms")
    print(f"load average at end: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
