"""The ``openai_chat`` adapter's pieces: tools from plain functions, the error classification, and the
stored form of its messages."""

from __future__ import annotations

from typing import Annotated, Any

import httpx2
import openai
import pytest
from pydantic import Field, ValidationError

from dex_agents.adapters.openai_chat import OpenAIChatBinding, create_openai_chat_session_flow, function_tool, tool
from dex_agents.pure.values.session import MessageRole, ToolEffect
from dex_agents.testing.openai_compatible import ChatReply
from dex_agents.demo.in_process_openai import in_process_openai_client

CLIENT = in_process_openai_client(lambda request: ChatReply(text="unused"))


def binding() -> OpenAIChatBinding:
    return OpenAIChatBinding(CLIENT, "m", {}, instructions=None, model_settings={})


def test_a_function_tool_has_the_schema_of_its_signature_and_validates_its_arguments() -> None:
    @tool(effect=ToolEffect.IDEMPOTENT_WRITE)
    def update_address(order_id: Annotated[int, Field(description="The order.")], address: str = "here") -> str:
        """Set an order's address."""
        return f"{order_id} -> {address}"

    made = function_tool(update_address)
    function = made.schema["function"]
    assert (function["name"], function["description"]) == ("update_address", "Set an order's address.")
    assert function["parameters"]["properties"]["order_id"] == {"description": "The order.", "title": "Order Id",
                                                                 "type": "integer"}
    assert function["parameters"]["required"] == ["order_id"] and made.effect is ToolEffect.IDEMPOTENT_WRITE
    assert function_tool(lambda: None).effect is None


@pytest.mark.parametrize("arguments", ['{"order_id": "x"}', '{"order_id": 1, "extra": 2}', "not json", "[]"])
def test_arguments_that_do_not_validate_are_refused_and_unreadable_ones_make_the_call_a_read(arguments: str) -> None:
    async def lookup_order(order_id: int) -> str:
        return "never"

    made = function_tool(tool(effect="idempotent_write")(lookup_order))
    with pytest.raises(ValidationError):  # run_tool makes it kit.invalid_arguments_error (the suite checks it)
        made.arguments.model_validate_json(arguments)
    chat = OpenAIChatBinding(CLIENT, "m", {"lookup_order": made}, instructions=None, model_settings={})
    effect = chat._effect({"name": "lookup_order", "arguments": arguments})  # noqa: SLF001
    assert effect is (ToolEffect.IDEMPOTENT_WRITE if arguments.startswith("{") else ToolEffect.READ)
    assert chat._effect({"name": "missing", "arguments": "{}"}) is ToolEffect.READ  # noqa: SLF001


def test_what_cannot_be_a_tool_is_refused_at_creation() -> None:
    def variadic(*orders: int) -> str:
        return ""

    def twice() -> str:
        return ""

    with pytest.raises(TypeError, match="cannot be passed by keyword"):
        function_tool(variadic)
    with pytest.raises(TypeError, match="plain Python functions"):
        function_tool(print)
    with pytest.raises(ValueError, match="not a valid ToolEffect"):
        tool(effect="read_only")
    with pytest.raises(ValueError, match="two tools have the same name"):
        create_openai_chat_session_flow(CLIENT, "m", [twice, twice], "Twice")


def _status_error(status: int, code: str | None = None) -> openai.APIStatusError:
    request = httpx2.Request("POST", "https://api.invalid/v1/chat/completions")
    body: dict[str, Any] = {"message": "m", "code": code}
    return openai.APIStatusError("m", response=httpx2.Response(status, request=request), body=body)


@pytest.mark.parametrize(("error", "final"), [
    (_status_error(400), True), (_status_error(401), True), (_status_error(404), True),
    (_status_error(408), False), (_status_error(429), False), (_status_error(429, "insufficient_quota"), True),
    (_status_error(500), False), (openai.OpenAIError("no API key"), True),
    (openai.APIConnectionError(request=httpx2.Request("POST", "https://api.invalid")), False), (ValueError(), False),
])
def test_errors_no_retry_can_fix(error: BaseException, final: bool) -> None:
    assert binding().is_non_retryable(error) is final


def test_the_context_window_error_is_its_code() -> None:
    assert binding().is_context_window_exceeded(_status_error(400, "context_length_exceeded"))
    assert not binding().is_context_window_exceeded(_status_error(400, "invalid_value"))


def test_a_tool_message_is_stored_with_the_name_its_call_gives() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id":1}'}}
    stored = binding().to_framework_messages([
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"}])
    assert [(m.role, m.tool_call_id, m.tool_name) for m in stored] == [
        (MessageRole.ASSISTANT, "c1", "lookup_order"), (MessageRole.TOOL, "c1", "lookup_order")]
    assert stored[0].tool_arguments == '{"order_id":1}' and stored[1].tool_output == "shipped"
    with pytest.raises(ValueError, match="not a Chat Completions message"):
        binding().parse_item('{"type": "function_call"}')
