"""The console tests' agent: the demo support agent (its tools, turns and scripted model, on Pydantic AI)
with an approval deadline, a model gate and a note tool that echoes what it is given.

``build_console_flow(state_directory, flow_type, gated=True)``: the lookup turn's answer streams its
first words, then waits at ``FileGate(state_directory, MODEL_GATE)`` before the rest, so a test sees
streamed text while the model call still runs. A user message holding ``PAYLOAD`` makes the model
call ``echo_note(text=<the message>)``, whose output repeats it, and the answer repeats it again: the
escaping test finds the payload in a message, a tool argument and a tool output.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.messages import UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from dex_agents.adapters.pydantic_ai import DEX_EFFECT_METADATA_KEY, create_pydantic_ai_session_flow
from dex_agents.demo.support_agent import _scripted_response
from dex_agents.demo.support_script import INSTRUCTIONS, REFUNDS_LOG, support_tools, word_chunks
from dex_agents.pure.values.session import ToolEffect
from dex_agents.serving.gate import FileGate
from dex_agents.shell.flow import AgentSessionFlow

MODEL_GATE: Final = "model"
DEADLINE_MS: Final = 3_600_000
PAYLOAD: Final = '<script>window.__pwned = 1</script>"><img src=x onerror="window.__pwned = 2">'
LOOKUP_ANSWER_START: Final = "Here is what I found:"
NOTE_TOOL: Final = "echo_note"


def refunds(state_directory: Path) -> int:
    """Refunds the demo tool performed (lines of its log)."""
    log = state_directory / REFUNDS_LOG
    return len(log.read_text().splitlines()) if log.exists() else 0


def _respond(messages: list[ModelMessage]) -> ModelResponse:
    request = next((message for message in reversed(messages) if isinstance(message, ModelRequest)), None)
    parts = [] if request is None else request.parts
    returns = [part for part in parts if isinstance(part, ToolReturnPart)]
    prompts = [part.content for part in parts if isinstance(part, UserPromptPart) and isinstance(part.content, str)]
    if returns and returns[-1].tool_name == NOTE_TOOL:
        return ModelResponse(parts=[TextPart(f"Noted: {returns[-1].content}")])
    if prompts and PAYLOAD in prompts[-1]:
        return ModelResponse(parts=[ToolCallPart(NOTE_TOOL, {"text": prompts[-1]}, tool_call_id=f"note-{len(messages)}")])
    return _scripted_response(messages)


def build_console_flow(state_directory: Path, flow_type: str, *, gated: bool = True) -> AgentSessionFlow:
    """The console tests' session Flow (see the module docstring)."""
    gate = FileGate(state_directory, MODEL_GATE)

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        response = _respond(messages)
        for index, part in enumerate(response.parts):
            if isinstance(part, TextPart):
                chunks = word_chunks(part.content)
                held = gated and part.content.startswith(LOOKUP_ANSWER_START)
                for number, chunk in enumerate(chunks):
                    if held and number == len(chunks) // 2:
                        await gate.mark_reached_async()
                    yield chunk
            elif isinstance(part, ToolCallPart):
                yield {index: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(),
                                            tool_call_id=part.tool_call_id)}

    async def echo_note(text: str) -> str:
        """Write down a note and read it back."""
        return f"note kept: {text}"

    functions = support_tools(state_directory)
    tools = [
        Tool(functions.lookup_order, metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.READ.value}),
        Tool(functions.refund_order, metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.NON_IDEMPOTENT_WRITE.value}),
        Tool(echo_note, metadata={DEX_EFFECT_METADATA_KEY: ToolEffect.READ.value}),
    ]
    agent = Agent(FunctionModel(lambda messages, info: _respond(messages), stream_function=stream),
                  instructions=INSTRUCTIONS, tools=tools)
    return create_pydantic_ai_session_flow(agent, flow_type, interrupt_deadline_ms=DEADLINE_MS)
