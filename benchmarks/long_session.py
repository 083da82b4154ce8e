"""One session of 2,000 short turns on the local engine: history stays bounded, turns stay flat.

Run: ``python -m benchmarks.long_session [--turns 2000] [--threshold N]``. Prints figures, never asserts.

The engine runs as a child process with an fsync per commit, the Worker in this process; the agent is
Pydantic AI with a ``FunctionModel`` that answers at once (the turn is all durability) and, as every
real model, has a context window: it refuses an input of more than ``--window`` messages with OpenAI's
``context_length_exceeded``, so the session compacts (its default policy) and the model's input stays
bounded. Without a window the framework's own work grows with the input (Pydantic AI re-reads the whole
history on every call: about 50 ms a call at 1,600 messages here), whatever the session does. The session is
started by ``SessionClient.start``, so it gets the session Flow's continue-as-new threshold
(``DEFAULT_CONTINUE_AS_NEW_THRESHOLD`` history events, or ``--threshold``). Printed: the rollovers, the
history events the engine keeps for the session's current run (bounded by the threshold), the p50 turn
time of turns 10-110 and of the last 100 turns and their ratio, then whether an export of the session
(every run) replays identically.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Final

EARLY: Final = slice(9, 110)
"""Turns 10-110 (1-based)."""
LAST_TURNS: Final = 100


def p50_ms(samples: Sequence[float]) -> float:
    return 1000 * statistics.median(samples)


def main(argv: Sequence[str] | None = None) -> None:
    from dex import FlowConfig, StartFlowOptions, StepExecutionId, WaitForStepCompletionOptions
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import ModelHTTPError
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from dex_agents import SendUserMessageInput
    from dex_agents.adapters.pydantic_ai import create_pydantic_ai_session_flow
    from dex_agents.client import SessionClient
    from dex_agents.engine import start_engine
    from dex_agents.engine.run_history import run_history
    from dex_agents.pure.offline.replay_report import replay_export
    from dex_agents.shell.dex_options import DEFAULT_CONTINUE_AS_NEW_THRESHOLD
    from dex_agents.testing import AgentTestEnvironment

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000, help="short turns (default 2000)")
    parser.add_argument("--window", type=int, default=120,
                        help="the model's context window, in messages (default 120)")
    parser.add_argument("--threshold", type=int, default=None,
                        help=f"continue-as-new threshold in history events (default the session Flow's, "
                             f"{DEFAULT_CONTINUE_AS_NEW_THRESHOLD})")
    args = parser.parse_args(argv)
    threshold = args.threshold or DEFAULT_CONTINUE_AS_NEW_THRESHOLD

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > args.window:
            raise ModelHTTPError(400, "bench", {"error": {"code": "context_length_exceeded"}})
        return ModelResponse(parts=[TextPart("ok")])

    flow = create_pydantic_ai_session_flow(Agent(FunctionModel(model)), "LongSessionBench")
    print(f"Python {sys.version.split()[0]}; {os.cpu_count()} CPUs; load "
          f"{' '.join(f'{value:.2f}' for value in os.getloadavg())}; engine in a child process (power-loss)")
    wait = WaitForStepCompletionOptions(request_timeout=timedelta(seconds=60))
    session_id = "long-session-bench"
    with tempfile.TemporaryDirectory() as directory:
        db_path = Path(directory) / "engine.db"
        with (start_engine(db_path, in_process=False) as engine,
              AgentTestEnvironment.start(server_address=engine.address, flows=[flow]) as env):
            client = env.client
            sessions = SessionClient(client, flow, timeout=60.0)
            options = None
            if args.threshold is not None:
                options = StartFlowOptions(config_override=FlowConfig(continue_as_new_threshold=args.threshold))
            sessions.start(session_id, options=options)
            samples: list[float] = []
            model_steps = 0
            for turn in range(1, args.turns + 1):
                started = time.perf_counter()
                client.invoke_rpc(flow.send_user_message, session_id, SendUserMessageInput(text=f"short {turn}"))
                while True:  # a turn that compacts first runs RunModel twice (refused, then answered)
                    model_steps += 1
                    client.wait_for_step_completion(session_id, StepExecutionId("RunModel", model_steps), wait)
                    state = sessions.state(session_id)
                    if state is not None and state.ended_turn_count == turn:
                        break
                samples.append(time.perf_counter() - started)
                assert state.completed_turn_count == turn, state.last_turn_error
            summary = sessions.read_attribute(session_id, flow.history_summary)
            runs = run_history(db_path, session_id)
            assert runs is not None
            early, last = p50_ms(samples[EARLY]), p50_ms(samples[-LAST_TURNS:])
            print(f"turns: {args.turns}; continue-as-new threshold: {threshold} history events")
            print(f"model window: {args.window} messages; compactions: {summary.compactions if summary else 0}")
            print(f"rollovers: {runs.rollovers} ({len(runs.run_ids)} runs)")
            print(f"history events of the current run: {runs.current_run_events} (threshold {threshold})")
            print(f"turn p50: turns 10-110 {early:.1f} ms; turns {args.turns - LAST_TURNS + 1}-{args.turns} "
                  f"{last:.1f} ms; ratio {last / early:.2f}x (target <= 1.2x)")
            started = time.perf_counter()
            document = sessions.export(session_id)
            export_s = time.perf_counter() - started
            replayed = replay_export(document).value_or(None)
            identical = replayed is not None and replayed.identical
            print(f"export: {len(document.steps)} steps, {len(document.inputs)} inputs in {export_s:.1f} s; "
                  f"replay identical: {identical}")
            if replayed is not None and not identical:
                for line in replayed.describe()[:12]:
                    print(f"  {line}")
            sessions.close()


if __name__ == "__main__":
    main()
