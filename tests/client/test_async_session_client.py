"""``dex_agents.client.AsyncSessionClient``: the same session through asyncio."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from dex_agents.client import AsyncSessionClient, NoWorkerError, SessionEvent, SessionOverview
from dex_agents.testing.private_engine import PrivateDexEngine
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory
from tests.shell.agents import LOOKUP_ANSWER, LOOKUP_MESSAGE, REFUND_MESSAGE, build_support_flow, unique_flow_type


def test_an_asyncio_application_runs_a_session(
        dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory, tmp_path: Path) -> None:
    flow_type = unique_flow_type("AsyncClientApp")
    agent_environment([build_support_flow(tmp_path, flow_type=flow_type)])
    session_id = f"s-{uuid.uuid4().hex[:12]}"

    async def application() -> None:
        async with await AsyncSessionClient.connect(dex_engine.server_address, flow_type) as sessions:
            await sessions.start(session_id, REFUND_MESSAGE)
            interrupt = await sessions.wait_for_pending_interrupt(session_id, "refund")
            await sessions.check_worker(session_id)
            assert await sessions.reject(session_id, interrupt.interrupt_id, "not today") is True
            await sessions.wait_for_turns(session_id, 1)
            seen: list[SessionEvent] = []
            async for item in sessions.follow(session_id):
                if item is None:
                    break
                seen.append(item)
            page = await sessions.events(session_id)
            assert [item.cursor for item in seen] == [item.cursor for item in page.events]
            assert "interrupt_resolved" in [item.event.type for item in seen]

            assert await sessions.send(session_id, LOOKUP_MESSAGE, message_id="async-1") is True
            await sessions.wait_for_completed_turns(session_id, 2)
            assert await sessions.send(session_id, LOOKUP_MESSAGE, message_id="async-1") is True  # nothing queued
            exported = await sessions.export(session_id)
            assert exported.session.session_id == session_id and exported.inputs
            later = await sessions.events(session_id, page.cursor)
            assert later.events[0].event.type == "turn_started" and not later.missed_events
            snapshot = await sessions.snapshot(session_id)
            assert snapshot.messages[-1].text == LOOKUP_ANSWER
            assert all(call.tool_name == "lookup_order" for call in snapshot.tool_calls)
            assert (await sessions.messages(session_id, limit=1)).messages == snapshot.messages[-1:]
            assert (await sessions.state(session_id)) is not None
            overview = await sessions.overview(session_id)  # the three values, in one read
            usage = await sessions.read_attribute(session_id, sessions.flow.agent_usage)
            assert overview == SessionOverview(state=await sessions.state(session_id),
                                               pending_interrupts=await sessions.pending_interrupts(session_id),
                                               usage=usage)
            assert overview.usage is not None and overview.usage.requests >= 1
            assert session_id in [entry.flow_id for entry in await sessions.list_sessions()]
            await sessions.stop(session_id)

    asyncio.run(application())


def test_without_a_worker_check_worker_fails(dex_engine: PrivateDexEngine) -> None:
    flow_type = unique_flow_type("AsyncClientNoWorker")

    async def application() -> None:
        async with await AsyncSessionClient.connect(dex_engine.server_address, flow_type) as sessions:
            await sessions.start("lonely")
            with pytest.raises(NoWorkerError, match=f"no Worker serving {flow_type} answered"):
                await sessions.check_worker("lonely")
            with pytest.raises(TimeoutError, match="waiting for a pending interrupt"):
                await sessions.wait_for_pending_interrupt("lonely", timeout=0.2)
            await sessions.stop("lonely")

    asyncio.run(application())
