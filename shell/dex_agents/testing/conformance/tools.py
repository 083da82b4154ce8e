"""The conformance suite's tools: one per effect class, as plain typed async Python functions.

Every framework builds tools from a typed function (Pydantic AI ``Tool``, LangChain
``StructuredTool``, OpenAI Agents ``function_tool``), so an adapter's fixture only wraps each
``ConformanceTool.function`` and attaches its ``effect`` the framework's way (for example metadata
``{"dex_effect": effect.value}``).

Invariants: every run of a tool body is recorded in the ``InvocationLog`` named after the tool
(``tool_runs``) before it returns; when the gate ``<tool>-before`` or ``<tool>-after`` is armed, the
body pauses before or after its effect (the effect is the log line ``<tool> <arguments>``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import final

from dex_agents.pure.values.session import ToolEffect
from dex_agents.testing.conformance.model import pause_if_armed
from dex_agents.testing.coordination import InvocationLog

LOOKUP_ORDER = "lookup_order"
UPDATE_ADDRESS = "update_address"
REFUND_ORDER = "refund_order"
NOTIFY_CUSTOMER = "notify_customer"
ASK_BILLING = "ask_billing"
"""The sub-agent tool of the sub-agent scenarios: its calls run as child sessions of the billing agent."""


@final
@dataclass(frozen=True, slots=True)
class ConformanceTool:
    """A tool to give the agent: ``function`` is typed and documented, ``effect`` its class."""

    name: str
    effect: ToolEffect
    function: Callable[..., Awaitable[str]]


def tool_runs(state_directory: Path, tool_name: str) -> list[str]:
    """Every recorded run of ``tool_name`` (one ``<arguments JSON>`` line per run)."""
    return InvocationLog(state_directory, tool_name).entries()


def conformance_tools(state_directory: Path) -> list[ConformanceTool]:
    """The four tools, recording their runs under ``state_directory``."""

    async def effect(name: str, arguments: dict[str, object]) -> None:
        await pause_if_armed(state_directory, f"{name}-before")
        InvocationLog(state_directory, name).record(json.dumps(arguments, sort_keys=True))
        await pause_if_armed(state_directory, f"{name}-after")

    async def lookup_order(order_id: int) -> str:
        """Look up an order's shipping status."""
        await effect(LOOKUP_ORDER, {"order_id": order_id})
        return f"order {order_id}: shipped"

    async def update_address(order_id: int, address: str) -> str:
        """Set an order's delivery address (idempotent)."""
        await effect(UPDATE_ADDRESS, {"address": address, "order_id": order_id})
        return f"order {order_id}: address set to {address}"

    async def refund_order(order_id: int, amount: int) -> str:
        """Refund an amount in cents on an order (not idempotent; needs approval)."""
        await effect(REFUND_ORDER, {"amount": amount, "order_id": order_id})
        return f"order {order_id}: refunded {amount}"

    async def notify_customer(order_id: int, message: str) -> str:
        """Send the customer a message about an order (effect not classified)."""
        await effect(NOTIFY_CUSTOMER, {"message": message, "order_id": order_id})
        return f"order {order_id}: customer notified"

    return [
        ConformanceTool(LOOKUP_ORDER, ToolEffect.READ, lookup_order),
        ConformanceTool(UPDATE_ADDRESS, ToolEffect.IDEMPOTENT_WRITE, update_address),
        ConformanceTool(REFUND_ORDER, ToolEffect.NON_IDEMPOTENT_WRITE, refund_order),
        ConformanceTool(NOTIFY_CUSTOMER, ToolEffect.UNCLASSIFIED, notify_customer),
    ]


__all__ = [
    "ASK_BILLING",
    "LOOKUP_ORDER",
    "NOTIFY_CUSTOMER",
    "REFUND_ORDER",
    "UPDATE_ADDRESS",
    "ConformanceTool",
    "conformance_tools",
    "tool_runs",
]
