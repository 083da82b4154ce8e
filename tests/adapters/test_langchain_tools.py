"""Unit checks of how the LangChain adapter runs one deferred tool call (no engine)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException, tool

from dex_agents.adapters.langchain import IDEMPOTENCY_KEY_CONFIG, LangChainRunner
from dex_agents.shell.runner import ToolExecutionError, ToolExecutionResult
from tests.adapters.fakes import execution, pending
from tests.adapters.langchain_support import ReplyChatModel


def run(tools: list[BaseTool], name: str, arguments: str, *, attempt: int = 1) -> ToolExecutionResult:
    runner = LangChainRunner(ReplyChatModel(replies=[]), tools)
    return asyncio.run(runner.execute_deferred_tool_call(execution(pending(name, arguments), attempt=attempt)))


class Runs:
    def __init__(self) -> None:
        self.arguments: list[dict[str, Any]] = []

    def tool(self, **options: Any) -> StructuredTool:
        async def lookup(order_id: int) -> str:
            """Look up an order."""
            self.arguments.append({"order_id": order_id})
            if order_id == 13:
                raise ToolException("order 13 is archived")
            if order_id == 666:
                raise RuntimeError("the database is down")
            return f"order {order_id} shipped"

        return StructuredTool.from_function(coroutine=lookup, **options)


def test_a_tool_runs_with_the_model_arguments() -> None:
    runs = Runs()
    assert run([runs.tool()], "lookup", '{"order_id": 7}') == ToolExecutionResult(output="order 7 shipped")
    assert runs.arguments == [{"order_id": 7}]


@pytest.mark.parametrize(("name", "arguments", "match"), [
    ("missing", "{}", "Unknown tool 'missing'; the available tools are: 'lookup'"),
    ("lookup", '{"order_id": ', "Invalid arguments for tool 'lookup': not JSON"),
    ("lookup", "[7]", "Invalid arguments for tool 'lookup': expected a JSON object"),
    ("lookup", '{"order_id": "seven"}', "(?s)Invalid arguments for tool 'lookup': .*order_id"),
], ids=["unknown_tool", "not_json", "not_an_object", "does_not_validate"])
def test_calls_the_tool_cannot_take_fail_without_running_it(name: str, arguments: str, match: str) -> None:
    runs = Runs()
    with pytest.raises(ToolExecutionError, match=match):
        run([runs.tool()], name, arguments)
    assert runs.arguments == []


def test_a_tool_exception_is_an_error_the_model_reads() -> None:
    with pytest.raises(ToolExecutionError, match="order 13 is archived"):
        run([Runs().tool()], "lookup", '{"order_id": 13}')


@pytest.mark.parametrize(("handle_tool_error", "expected"), [
    (True, "order 13 is archived"),
    ("The order cannot be looked up.", "The order cannot be looked up."),
    (lambda error: f"handled: {error}", "handled: order 13 is archived"),
], ids=["true", "text", "function"])
def test_the_tool_own_error_handling_gives_the_error_text(handle_tool_error: Any, expected: str) -> None:
    with pytest.raises(ToolExecutionError) as raised:
        run([Runs().tool(handle_tool_error=handle_tool_error)], "lookup", '{"order_id": 13}')
    assert raised.value.message == expected


def test_the_tool_own_validation_error_handling_gives_the_error_text() -> None:
    runs = Runs()
    with pytest.raises(ToolExecutionError) as raised:
        run([runs.tool(handle_validation_error="Give an order number.")], "lookup", '{"order_id": "x"}')
    assert raised.value.message == "Give an order number." and runs.arguments == []


def test_an_unexpected_exception_propagates_for_the_tool_step_policy() -> None:
    with pytest.raises(RuntimeError, match="the database is down"):
        run([Runs().tool(handle_tool_error=True)], "lookup", '{"order_id": 666}')


def test_a_tool_reads_its_idempotency_key_and_call_id() -> None:
    seen: dict[str, Any] = {}

    @tool
    async def refund(order_id: int, tool_call_id: Annotated[str, InjectedToolCallId], config: RunnableConfig) -> str:
        """Refund an order."""
        seen.update(configurable=dict(config.get("configurable") or {}), tool_call_id=tool_call_id)
        return "refunded"

    assert run([refund], "refund", '{"order_id": 1}', attempt=2).output == "refunded"
    assert seen["tool_call_id"] == "c-1"
    assert {key: seen["configurable"][key] for key in (IDEMPOTENCY_KEY_CONFIG, "dex_flow_id", "dex_tool_call_id",
                                                         "dex_attempt")} == {
        IDEMPOTENCY_KEY_CONFIG: "s/turn-1/c-1", "dex_flow_id": "s", "dex_tool_call_id": "c-1", "dex_attempt": 2}


def test_outputs_that_are_not_text_are_stored_as_json_and_an_artifact_is_dropped() -> None:
    @tool
    async def details(order_id: int) -> dict[str, object]:
        """An order's details."""
        return {"order_id": order_id, "items": ["book"]}

    @tool(response_format="content_and_artifact")
    async def label(order_id: int) -> tuple[str, bytes]:
        """An order's shipping label."""
        return f"label of order {order_id}", b"%PDF"

    assert run([details], "details", '{"order_id": 1}').output == '{"order_id": 1, "items": ["book"]}'
    assert run([label], "label", '{"order_id": 1}').output == "label of order 1"
