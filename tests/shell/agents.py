"""The support agent of the shell's integration tests: one scripted session Flow, built the same way
in the test process (for its Client) and in a Worker child (``tests.shell.worker_main``).

Tools: ``lookup_order`` (``read``), ``refund`` (``non_idempotent_write``, so it needs approval),
``lost_refund`` (``non_idempotent_write`` without approval, whose one attempt always fails: its outcome
is unknown), ``ledger_refund`` (``refund`` without approval, whose policy reconciles: the reconcile
records each ask in ``RECONCILE_LOG``, stops at ``RECONCILE_GATE``, then finds the refund in the tool
log by its idempotency key),
and ``stalled_self_destruct_refund`` (``non_idempotent_write`` without approval, which first stops
its Worker's event loop at the synchronous ``SELF_DESTRUCT_GATE``, so nothing the Step had not handed
to gRPC before the tool ran can leave the process, then SIGKILLs its Worker). It kills only in a Flow
built with ``self_destruct=True``, which only a Worker child's ``support_flow_from_environment``
does, and refuses anywhere else.
The runner records ``<tool>:<idempotency key>`` in ``tool_invocations(state_directory)`` before a
tool runs, so a test counts real tool runs across processes. A tool whose arguments carry
``"gate": "<name>"`` then stops at ``FileGate(state_directory, "<name>")`` until the test releases
it; the ``GATED_*`` messages use this, ``GATED_MODEL_MESSAGE`` stops the model call at
``MODEL_GATE`` after its output, and ``LOOKUP_THEN_GATED_MODEL_MESSAGE`` runs ``lookup_order`` and
then stops the turn's second model call at ``MODEL_BEFORE_OUTPUT_GATE`` before any output, so crash
tests can SIGKILL the Worker at an exact point.

A Worker child learns its state directory and Flow type from ``TEST_STATE_DIR`` and
``TEST_FLOW_TYPE`` (``worker_environment`` builds both). Flow types must be unique on the engine
the whole test session shares: take one from ``unique_flow_type`` per test.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path
from typing import Final

from dex_agents.pure.values.runner import ReconciledOutcome, ToolPolicy
from dex_agents.pure.values.session import ToolEffect
from dex_agents.shell import AgentSessionFlow, DeferredToolExecution, create_agent_session_flow
from dex_agents.testing import FileGate, InvocationLog, ScriptedAgentRunner, ScriptedModelCall, ScriptedToolCall

STATE_DIR_ENV: Final = "TEST_STATE_DIR"
FLOW_TYPE_ENV: Final = "TEST_FLOW_TYPE"
DEADLINE_ENV: Final = "TEST_INTERRUPT_DEADLINE_MS"
DEFAULT_FLOW_TYPE: Final = "SupportAgentTest"
WORKER_MODULE: Final = "tests.shell.worker_main"
TOOL_LOG: Final = "tool-calls"

LOOKUP_MESSAGE: Final = "Where is order 42?"
LOOKUP_ANSWER: Final = "Order 42 ships today."
REFUND_MESSAGE: Final = "Refund order 42"
REFUND_ANSWER: Final = "Order 42 is refunded."
GATED_LOOKUP_MESSAGE: Final = "Where is order 42? Take your time."
GATED_REFUND_MESSAGE: Final = "Refund order 42, carefully."
GATED_MODEL_MESSAGE: Final = "Think it over."
GATED_MODEL_ANSWER: Final = "I thought it over."
LOOKUP_THEN_GATED_MODEL_MESSAGE: Final = "Where is order 42? Think before you answer."
SELF_DESTRUCT_ANSWER: Final = "The refund of order 42 may or may not have happened."
STALLED_SELF_DESTRUCT_MESSAGE: Final = "Refund order 42, stall, and crash."
LEDGER_REFUND_MESSAGE: Final = "Refund order 42 and keep it in the ledger."
LEDGER_REFUND_ANSWER: Final = "Order 42 is refunded, says the ledger."
LOST_REFUND_MESSAGE: Final = "Refund order 42; the bank may not answer."
LOST_REFUND_ANSWER: Final = "I cannot tell whether order 42 was refunded."

LOOKUP_GATE: Final = "lookup_order"
REFUND_GATE: Final = "refund"
MODEL_GATE: Final = "model"
MODEL_BEFORE_OUTPUT_GATE: Final = "model-before-output"
SELF_DESTRUCT_GATE: Final = "self-destruct"

LOOKUP_CALL_ID: Final = "call-lookup"
REFUND_CALL_ID: Final = "call-refund"
STALLED_SELF_DESTRUCT_CALL_ID: Final = "call-stalled-self-destruct"
LOST_REFUND_CALL_ID: Final = "call-lost-refund"
LEDGER_REFUND_CALL_ID: Final = "call-ledger-refund"
LEDGER_GATE: Final = "ledger"
RECONCILE_GATE: Final = "reconcile"
RECONCILE_LOG: Final = "reconcile-calls"


def _order_call(tool_name: str, tool_call_id: str, gate: str | None = None) -> ScriptedToolCall:
    arguments: dict[str, object] = {"order_id": 42}
    if gate is not None:
        arguments["gate"] = gate
    return ScriptedToolCall(tool_call_id=tool_call_id, tool_name=tool_name,
                            arguments=json.dumps(arguments, sort_keys=True, separators=(",", ":")))


SUPPORT_SCRIPT: Final = {
    LOOKUP_MESSAGE: (ScriptedModelCall(tool_calls=(_order_call("lookup_order", LOOKUP_CALL_ID),)),
                     ScriptedModelCall(text=LOOKUP_ANSWER)),
    REFUND_MESSAGE: (ScriptedModelCall(tool_calls=(_order_call("refund", REFUND_CALL_ID),)),
                     ScriptedModelCall(text=REFUND_ANSWER)),
    GATED_LOOKUP_MESSAGE: (ScriptedModelCall(tool_calls=(_order_call("lookup_order", LOOKUP_CALL_ID, LOOKUP_GATE),)),
                           ScriptedModelCall(text=LOOKUP_ANSWER)),
    GATED_REFUND_MESSAGE: (ScriptedModelCall(tool_calls=(_order_call("refund", REFUND_CALL_ID, REFUND_GATE),)),
                           ScriptedModelCall(text=REFUND_ANSWER)),
    GATED_MODEL_MESSAGE: (ScriptedModelCall(text=GATED_MODEL_ANSWER, gate_after_output=MODEL_GATE),),
    LOOKUP_THEN_GATED_MODEL_MESSAGE: (
        ScriptedModelCall(tool_calls=(_order_call("lookup_order", LOOKUP_CALL_ID),)),
        ScriptedModelCall(text=LOOKUP_ANSWER, gate_before_output=MODEL_BEFORE_OUTPUT_GATE)),
    STALLED_SELF_DESTRUCT_MESSAGE: (
        ScriptedModelCall(tool_calls=(_order_call("stalled_self_destruct_refund", STALLED_SELF_DESTRUCT_CALL_ID),)),
        ScriptedModelCall(text=SELF_DESTRUCT_ANSWER)),
    LEDGER_REFUND_MESSAGE: (
        ScriptedModelCall(tool_calls=(_order_call("ledger_refund", LEDGER_REFUND_CALL_ID, LEDGER_GATE),)),
        ScriptedModelCall(text=LEDGER_REFUND_ANSWER)),
    LOST_REFUND_MESSAGE: (ScriptedModelCall(tool_calls=(_order_call("lost_refund", LOST_REFUND_CALL_ID),)),
                          ScriptedModelCall(text=LOST_REFUND_ANSWER)),
}
"""Model calls by user message; any other message gets the runner's echo answer."""

TOOL_POLICIES: Final = {
    "lookup_order": ToolPolicy(effect=ToolEffect.READ),
    "refund": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE),
    "stalled_self_destruct_refund": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False),
    "lost_refund": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE, requires_approval=False),
}


def tool_invocations(state_directory: Path) -> InvocationLog:
    """The log of real tool runs (``<tool>:<idempotency key>`` per run), shared across processes."""
    return InvocationLog(state_directory, TOOL_LOG)


def unique_flow_type(prefix: str = DEFAULT_FLOW_TYPE) -> str:
    """A Flow type no other test uses on the shared engine."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def build_support_flow(state_directory: Path, *, flow_type: str = DEFAULT_FLOW_TYPE,
                       self_destruct: bool = False, interrupt_deadline_ms: int | None = None) -> AgentSessionFlow:
    """The support agent's session Flow, with its gates and tool log in ``state_directory``.

    ``self_destruct`` lets ``stalled_self_destruct_refund`` SIGKILL the
    process they run in; without it they raise instead (so a Flow built in the test process can never
    kill the test).
    """

    async def pass_gate(call: DeferredToolExecution) -> dict[str, object]:
        arguments: dict[str, object] = json.loads(call.tool_call.arguments)
        gate = arguments.get("gate")
        if isinstance(gate, str):
            await FileGate(state_directory, gate).mark_reached_async()
        return arguments

    async def lookup_order(call: DeferredToolExecution) -> str:
        arguments = await pass_gate(call)
        return f"order {arguments['order_id']} ships today"

    async def refund(call: DeferredToolExecution) -> str:
        arguments = await pass_gate(call)
        return f"order {arguments['order_id']} refunded"

    async def stalled_self_destruct_refund(call: DeferredToolExecution) -> str:
        if not self_destruct:
            raise RuntimeError("stalled_self_destruct_refund runs only in a Worker child built with self_destruct=True")
        # Synchronous on purpose: the event loop (and with it the SDK's frame queue) stops until the kill.
        FileGate(state_directory, SELF_DESTRUCT_GATE).mark_reached()
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable: the process was sent SIGKILL")

    async def lost_refund(call: DeferredToolExecution) -> str:
        raise ConnectionError("the bank closed the connection after the refund request was sent")

    async def reconcile_ledger_refund(tool_name: str, arguments: str, idempotency_key: str,
                                      error: str) -> ReconciledOutcome:
        InvocationLog(state_directory, RECONCILE_LOG).record(idempotency_key)
        await FileGate(state_directory, RECONCILE_GATE).mark_reached_async()
        if f"{tool_name}:{idempotency_key}" in tool_invocations(state_directory).entries():
            return ReconciledOutcome.succeeded(f"the ledger holds the refund {idempotency_key}")
        return ReconciledOutcome.failed("the ledger holds no such refund")

    tools = {"lookup_order": lookup_order, "refund": refund, "stalled_self_destruct_refund": stalled_self_destruct_refund,
             "lost_refund": lost_refund, "ledger_refund": refund}
    policies = {**TOOL_POLICIES, "ledger_refund": ToolPolicy(effect=ToolEffect.NON_IDEMPOTENT_WRITE,
                                                             requires_approval=False, reconcile=reconcile_ledger_refund)}
    runner = ScriptedAgentRunner(script=SUPPORT_SCRIPT, tools=tools,
                                 gate_directory=state_directory, invocation_log=tool_invocations(state_directory))
    return create_agent_session_flow(runner, flow_type, tool_policies=policies,
                                     interrupt_deadline_ms=interrupt_deadline_ms)


def worker_environment(state_directory: Path, flow_type: str, interrupt_deadline_ms: int | None = None
                       ) -> dict[str, str]:
    """The environment a Worker child (``WORKER_MODULE``) needs to build the same Flow."""
    deadline = {} if interrupt_deadline_ms is None else {DEADLINE_ENV: str(interrupt_deadline_ms)}
    return {STATE_DIR_ENV: str(state_directory), FLOW_TYPE_ENV: flow_type, **deadline}


def support_flow_from_environment() -> AgentSessionFlow:
    """The Flow a Worker child serves: ``build_support_flow`` with ``TEST_STATE_DIR`` and ``TEST_FLOW_TYPE``,
    with the self-destruct tools armed (they kill this Worker child, never a test process).

    Raises:
        RuntimeError: ``TEST_STATE_DIR`` is not set.
    """
    state_directory = os.environ.get(STATE_DIR_ENV, "").strip()
    if not state_directory:
        raise RuntimeError(f"{STATE_DIR_ENV} is not set: the Worker child needs the test's state directory")
    flow_type = os.environ.get(FLOW_TYPE_ENV, "").strip() or DEFAULT_FLOW_TYPE
    deadline = os.environ.get(DEADLINE_ENV, "").strip()
    return build_support_flow(Path(state_directory), flow_type=flow_type, self_destruct=True,
                              interrupt_deadline_ms=int(deadline) if deadline else None)
