"""A session that receives five 1 MB user messages (issue 16): every turn completes, the model reads each
message whole, the snapshot and every page answer, each message's text is stored once, and a Worker
that lost its cache (a restart) still runs the next turn from Dex's committed state."""

from __future__ import annotations

import json
from typing import Final

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from dex_agents.adapters.kit.messages import REFERENCE_KEY
from dex_agents.adapters.pydantic_ai import create_pydantic_ai_session_flow
from dex_agents.pure.values.session import MessageRole
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.shell.agents import unique_flow_type

MEGABYTE: Final = 1_000_000
MESSAGES: Final = 5


def big_text(number: int) -> str:
    return f"message {number}: " + "é" * 100 + chr(ord("a") + number) * (MEGABYTE - 120)


def test_five_one_megabyte_messages_complete_every_turn_and_every_read_answers(
        agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory) -> None:
    seen_lengths: list[list[int]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts = [part.content for message in messages if isinstance(message, ModelRequest)
                   for part in message.parts if isinstance(part, UserPromptPart) and isinstance(part.content, str)]
        seen_lengths.append([len(prompt) for prompt in prompts])
        return ModelResponse(parts=[TextPart(f"read {len(prompts)} messages")])

    flow = create_pydantic_ai_session_flow(Agent(FunctionModel(model)), unique_flow_type("LargeMessages"))
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)
    session_id = "large-1"
    sessions.start_session(session_id)
    for number in range(1, MESSAGES + 1):
        assert sessions.send_user_message(session_id, big_text(number))
        state = sessions.wait_for_completed_turns(session_id, number, timeout=60)
        assert state.failed_turn_count == 0
    assert seen_lengths[-1] == [len(big_text(number)) for number in range(1, MESSAGES + 1)]

    snapshot = sessions.snapshot(session_id)
    users = [message for message in snapshot.messages if message.role is MessageRole.USER]
    assert [message.text for message in users] == [big_text(number) for number in range(1, MESSAGES + 1)]
    for message in users:  # the text is stored once: the framework item refers to it
        assert len(message.framework_item) < 1000 and REFERENCE_KEY in message.framework_item
        assert json.loads(message.framework_item)
    pages = []
    before: int | None = None
    while True:
        page = sessions.list_messages(session_id, before_sequence=before, limit=2)
        pages.append(page)
        before = page.next_before_sequence
        if before is None:
            break
    assert [m for page in reversed(pages) for m in page.messages] == list(snapshot.messages)

    flow.runtime.history.forget(session_id, next(run for flow_id, run in flow.runtime.history._runs
                                                 if flow_id == session_id))
    assert sessions.send_user_message(session_id, "and a short one")
    assert sessions.wait_for_completed_turns(session_id, MESSAGES + 1, timeout=60).failed_turn_count == 0
    assert seen_lengths[-1][:MESSAGES] == [len(big_text(number)) for number in range(1, MESSAGES + 1)]
