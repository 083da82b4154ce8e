"""A stored value the session cannot decode fails the session at once with a message naming the
value; it never retries forever (decoding the same text again cannot succeed)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import dex
from dex import (
    Attribute,
    BlobCacheConfig,
    Client,
    ClientOptions,
    Context,
    Flow,
    FlowStatus,
    PersistenceSchema,
    Step,
    StepDecision,
    StepList,
    StartFlowOptions,
    WorkerTarget,
    dead_end,
    open_blob_cache,
)

from dex_agents.pure.values.session import AgentSessionStartInput
from dex_agents.shell.codecs import session_codec_registry
from dex_agents.testing import PrivateDexEngine
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory
from tests.shell.agents import build_support_flow, unique_flow_type

CORRUPT_USAGE = Attribute("AgentUsage", str)
"""The ``AgentUsage`` name with a plain-string type: a foreign writer of the same session."""


class StartAgentSession(Step[AgentSessionStartInput]):
    """Stands in for the session's start Step on the writer's side (never executed there)."""

    def execute(self, context: Context, input: AgentSessionStartInput) -> StepDecision:
        return dead_end()


class ForeignWriter(Flow[AgentSessionStartInput]):
    """The session's Flow type as a foreign client knows it: it starts sessions with a corrupt value."""

    def __init__(self, flow_type: str) -> None:
        self._flow_type = flow_type

    def get_flow_type(self) -> str:
        return self._flow_type

    def get_steps(self) -> StepList[AgentSessionStartInput]:
        return StepList.start_step(StartAgentSession())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(CORRUPT_USAGE)


def test_an_undecodable_stored_value_fails_the_session_with_its_name(
    agent_environment: AgentEnvironmentFactory, dex_engine: PrivateDexEngine, tmp_path: Path
) -> None:
    flow_type = unique_flow_type()
    agent_environment([build_support_flow(tmp_path, flow_type=flow_type)])
    writer = ForeignWriter(flow_type)
    cache = open_blob_cache(BlobCacheConfig(str(tmp_path / "writer-cache"), 1 << 20))
    client = Client(dex.Registry([writer], session_codec_registry()), cache,
                    ClientOptions(dex_engine.server_address, worker_target=WorkerTarget(pull=True)))
    try:
        session_id = f"session-{uuid.uuid4().hex[:12]}"
        client.start_flow(writer, session_id, AgentSessionStartInput(initial_message="hi"),
                          StartFlowOptions().with_attribute(CORRUPT_USAGE, "not json"))
        result = client.wait_for_flow(session_id, timeout=timedelta(seconds=30))
    finally:
        client.close()
        cache.close()
    assert result.status is FlowStatus.FAILED
    assert f"session {session_id} cannot continue: stored AgentUsage cannot be decoded" in (result.error_message or "")
