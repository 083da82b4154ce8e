"""Unit tests of the adapter kit (no engine)."""

from __future__ import annotations

import pytest

from dex_agents.adapters.kit import (
    RunStateError,
    ToolOutcome,
    decode_run_state,
    encode_run_state,
    invalid_arguments_error,
    latest_round_results,
    model_call_usage,
    tool_effect_from_metadata,
    unknown_tool_error,
)
from dex_agents.pure.machine.texts import FAILED_PREFIX, OUTCOME_UNKNOWN_PREFIX, REJECTED_PREFIX
from dex_agents.pure.values.session import AgentToolCall, AgentUsage, ToolCallStatus, ToolEffect


def record(call_id: str, order: int, status: ToolCallStatus, **fields: str | None) -> AgentToolCall:
    return AgentToolCall(tool_call_id=call_id, turn_id="turn-1", tool_name="lookup", arguments="{}",
                         effect=ToolEffect.READ, requires_approval=False, deferral_order=order,
                         idempotency_key=f"s/turn-1/{call_id}", status=status, interrupt_id=None,
                         output=fields.get("output"), error=fields.get("error"),
                         rejection_message=fields.get("rejection_message"))


def test_a_run_state_round_trips_with_its_round_and_state() -> None:
    text = encode_run_state("demo", 3, ["a", "b"], {"messages": [1, "two"], "nested": {"x": None}})
    decoded = decode_run_state(text, adapter="demo", version=3)
    assert decoded.round_call_ids == ("a", "b")
    assert decoded.state == {"messages": [1, "two"], "nested": {"x": None}}


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "not JSON"),
    ('{"v":1,"turn":"[]"}', "not a dex-agents run-state envelope"),
    ('{"adapter":"other","round":["a"],"state":null,"version":1}', "written by adapter 'other'"),
    ('{"adapter":"demo","round":["a"],"state":null,"version":2}', "format version 2; this demo adapter reads version 1"),
    ('{"adapter":"demo","round":["a"],"state":null,"version":true}', "format version True"),
    ('{"adapter":"demo","round":[],"state":null,"version":1}', "no valid round"),
    ('{"adapter":"demo","round":["a","a"],"state":null,"version":1}', "no valid round"),
    ('{"adapter":"demo","round":[""],"state":null,"version":1}', "no valid round"),
])
def test_a_run_state_of_another_adapter_version_or_shape_is_refused_with_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(RunStateError, match=message):
        decode_run_state(text, adapter="demo", version=1)


def test_encoding_a_run_state_without_a_round_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        encode_run_state("demo", 1, [], None)


def test_latest_round_results_are_the_round_only_in_the_models_order() -> None:
    records = [
        record("old", 0, ToolCallStatus.SUCCEEDED, output="earlier round"),
        record("b", 2, ToolCallStatus.REJECTED, rejection_message="no"),
        record("a", 1, ToolCallStatus.SUCCEEDED, output="fine"),
        record("c", 3, ToolCallStatus.OUTCOME_UNKNOWN, error="crashed"),
        record("d", 4, ToolCallStatus.FAILED, error="broken"),
    ]
    state = decode_run_state(encode_run_state("demo", 1, ["a", "b", "c", "d"], None), adapter="demo", version=1)
    results = latest_round_results(state, records)
    assert [(r.tool_call_id, r.outcome) for r in results] == [
        ("a", ToolOutcome.SUCCESS), ("b", ToolOutcome.DENIED), ("c", ToolOutcome.UNKNOWN), ("d", ToolOutcome.FAILED)]
    assert [r.text for r in results] == ["fine", REJECTED_PREFIX + "no", OUTCOME_UNKNOWN_PREFIX + "crashed",
                                         FAILED_PREFIX + "broken"]


def test_latest_round_results_refuse_a_missing_or_open_record() -> None:
    state = decode_run_state(encode_run_state("demo", 1, ["a"], None), adapter="demo", version=1)
    with pytest.raises(RuntimeError, match="no record of tool call 'a'"):
        latest_round_results(state, [])
    with pytest.raises(RuntimeError, match="still pending"):
        latest_round_results(state, [record("a", 0, ToolCallStatus.PENDING)])


def test_a_tools_effect_comes_from_dex_effect_then_mcp_annotations() -> None:
    assert tool_effect_from_metadata("t", {"dex_effect": "idempotent_write"}) is ToolEffect.IDEMPOTENT_WRITE
    assert tool_effect_from_metadata("t", {"annotations": {"readOnlyHint": True}}) is ToolEffect.READ
    assert tool_effect_from_metadata("t", {"annotations": {"destructiveHint": True}}) is ToolEffect.NON_IDEMPOTENT_WRITE
    assert tool_effect_from_metadata("t", {"dex_effect": "read", "annotations": {"destructiveHint": True}}) is (
        ToolEffect.READ)
    assert tool_effect_from_metadata("t", None) is None
    assert tool_effect_from_metadata("t", {"other": 1}) is None


@pytest.mark.parametrize("value", ["read_only", 1, None])
def test_a_dex_effect_that_is_not_an_effect_is_an_error_never_a_fallback(value: object) -> None:
    with pytest.raises(ValueError, match="tool 'refund' has dex_effect="):
        tool_effect_from_metadata("refund", {"dex_effect": value, "annotations": {"readOnlyHint": True}})


def test_usage_counts_a_provider_left_out_or_reported_negative_are_zero() -> None:
    assert model_call_usage(input_tokens=None, output_tokens=-3, cache_read_tokens=4) == AgentUsage(
        requests=1, input_tokens=0, output_tokens=0, cache_read_tokens=4, cache_write_tokens=0)


def test_tool_errors_name_the_tool_and_what_is_wrong() -> None:
    assert unknown_tool_error("nope", ["b", "a", "a"]).message == "Unknown tool 'nope'; the available tools are: 'a', 'b'"
    assert unknown_tool_error("nope", []).message.endswith("are: none")
    assert invalid_arguments_error("lookup", "order_id: not an int").message == (
        "Invalid arguments for tool 'lookup': order_id: not an int")



class _ProviderError(Exception):
    def __init__(self, message: str, *, code: object = None, body: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.body = body


class _FrameworkOverflow(Exception):
    pass


def test_a_context_window_error_is_recognised_anywhere_in_its_chain_and_nothing_else_is() -> None:
    from dex_agents.adapters.kit import error_chain, says_context_window_exceeded

    coded = _ProviderError("400", code="context_length_exceeded")
    in_body = _ProviderError("400", body={"error": {"code": "context_length_exceeded"}})
    anthropic = RuntimeError("invalid_request_error: Prompt is too long: 210000 tokens > 200000 maximum")
    try:
        try:
            raise coded
        except _ProviderError as inner:
            raise RuntimeError("the model call failed") from inner
    except RuntimeError as outer:
        wrapped = outer
    assert [type(found) for found in error_chain(wrapped)] == [RuntimeError, _ProviderError]
    for found in (coded, in_body, anthropic, wrapped):
        assert says_context_window_exceeded(found), found
    assert says_context_window_exceeded(_FrameworkOverflow("too long"), _FrameworkOverflow)
    for error in (_ProviderError("400", code="invalid_value"), _ProviderError("500", body={"error": "x"}),
                  _FrameworkOverflow("too long"), ValueError("the prompt is fine")):
        assert not says_context_window_exceeded(error), error


def test_a_json_schema_validator_names_every_error_with_its_path() -> None:
    from dex_agents.adapters.kit import json_schema_validator
    from dex_agents.adapters.kit.arguments import arguments_problem

    schema = {"type": "object", "properties": {"order_id": {"type": "integer"}, "amount": {"type": "integer"}},
              "required": ["order_id", "amount"], "additionalProperties": False}
    validate = json_schema_validator(schema)
    assert validate('{"order_id":1,"amount":2}') == {"order_id": 1, "amount": 2}
    with pytest.raises(ValueError, match=r"\$\.amount: 'lots' is not of type 'integer'"):
        validate('{"order_id":1,"amount":"lots"}')
    with pytest.raises(ValueError, match="'amount' is a required property"):
        validate('{"order_id":1}')
    with pytest.raises(ValueError):
        validate("not json")
    assert arguments_problem("refund", validate, '{"order_id":1,"amount":2}') is None
    assert arguments_problem("refund", validate, '{"order_id":1}') == (
        "Invalid arguments for tool 'refund': $: 'amount' is a required property")
    assert arguments_problem("refund", None, "{}") == "the agent has no tool 'refund'"
