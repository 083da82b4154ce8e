"""The console's JSON API against a real local engine and an in-process Worker (httpx, ASGI transport)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import httpx
import pytest
from dex import FileCredential
from starlette.applications import Starlette

from dex_agents.client import StateCondition
from dex_agents.console.auth import check_bind
from dex_agents.demo.support_script import DEMO_TURNS, REFUNDS_LOG
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from dex_agents.testing.private_engine import PrivateDexEngine
from dex_agents.serving.gate import FileGate
from tests.console.agents import DEADLINE_MS, MODEL_GATE, build_console_flow, refunds
from tests.console.support import parse_sse, run_with_app
from tests.shell.agents import unique_flow_type
from tests.shell.scenario_flows import LOST_REFUND, lost_refund_flow

pytestmark = pytest.mark.slow


def test_requests_without_the_token_get_401_and_the_shells_carry_no_data(dex_engine: PrivateDexEngine,
                                                                         tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret\n")

    async def body(http: httpx.AsyncClient, app: Starlette) -> None:
        for path in ("/api/sessions", "/ui/sessions", "/api/sessions/x/events", "/ui/sessions/x"):
            answer = await http.get(path)
            assert answer.status_code == 401, path
            assert answer.json()["error"]["code"] == "unauthenticated"
            assert answer.headers["www-authenticate"] == "Bearer"
        assert (await http.post("/api/sessions/x/stop", json={})).status_code == 401
        wrong = await http.get("/api/sessions", headers={"Authorization": "Bearer nope"})
        assert (wrong.status_code, wrong.json()["error"]["message"]) == (401, "wrong bearer token")
        right = await http.get("/api/sessions?limit=1", headers={"Authorization": "Bearer s3cret"})
        assert right.status_code == 200 and "sessions" in right.json()
        shell = await http.get("/sessions/anything")
        assert shell.status_code == 200 and "data-session-id=\"anything\"" in shell.text

    run_with_app(dex_engine.server_address, body, credential=FileCredential(token_file))


def test_no_auth_serves_loopback_only() -> None:
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    with pytest.raises(ValueError, match="loopback"):
        check_bind("0.0.0.0", None)


def test_bad_ids_and_bad_input_get_json_4xx(dex_engine: PrivateDexEngine) -> None:
    async def body(http: httpx.AsyncClient, app: Starlette) -> None:
        for method, path in (("GET", "/api/sessions/no-such-session"), ("GET", "/api/sessions/no-such-session/events"),
                             ("GET", "/api/sessions/no-such-session/messages"),
                             ("GET", "/ui/sessions/no-such-session"), ("POST", "/api/sessions/no-such-session/stop")):
            answer = await http.request(method, path, json={} if method == "POST" else None)
            assert answer.status_code == 404, path
            assert answer.json()["error"]["code"] == "session_not_found", path
        assert (await http.get("/api/nothing-here")).json()["error"]["code"] == "not_found"
        bad = await http.get("/api/sessions?limit=abc")
        assert (bad.status_code, bad.json()["error"]["code"]) == (400, "bad_request")
        assert (await http.get("/api/sessions?limit=0")).status_code == 400
        not_json = await http.post("/api/sessions", content=b"{nope", headers={"Content-Type": "application/json"})
        assert (not_json.status_code, not_json.json()["error"]["message"]) == (400, "the body is not JSON")
        assert (await http.post("/api/sessions", json={"message": "hi"})).json()["error"]["message"] == \
            "flow_type is required"

    run_with_app(dex_engine.server_address, body)


def test_a_demo_session_through_the_api(dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory,
                                        agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_console_flow(tmp_path, unique_flow_type("ConsoleApi"), gated=False)
    environment = agent_environment([flow])
    sessions = agent_sessions(environment, flow)

    async def body(http: httpx.AsyncClient, app: Starlette) -> None:
        started = await http.post("/api/sessions", json={"flow_type": flow.get_flow_type(), "session_id": "api-1",
                                                         "message": DEMO_TURNS[0]})
        assert started.status_code == 201, started.text
        sessions.wait_for_completed_turns("api-1", 1)
        detail = (await http.get("/api/sessions/api-1")).json()
        assert detail["worker"] is True and detail["state"]["status"] == "waiting_for_user_message"
        call = next(item for item in detail["transcript"] if item["tool"] is not None)
        assert call["tool_name"] == "lookup_order" and json.loads(call["tool_arguments"]) == {"order_id": 42}
        assert {key: call["tool"][key] for key in ("effect", "status", "attempts")} == \
            {"effect": "read", "status": "succeeded", "attempts": 1}
        assert call["tool"]["idempotency_key"].startswith("api-1/turn-1/")
        assert any(item["role"] == "tool" and "shipped" in item["tool_output"] for item in detail["transcript"])
        assert detail["turn_usage"]["turn-1"]["requests"] == 2
        listed = (await http.get(f"/api/sessions?flow_type={flow.get_flow_type()}")).json()["sessions"]
        assert [(item["session_id"], item["turns"]) for item in listed] == [("api-1", 1)]
        assert "last_activity" not in listed[0]  # a second read per session: only on request
        with_activity = (await http.get(f"/api/sessions?flow_type={flow.get_flow_type()}"
                                        f"&include=last_activity")).json()["sessions"][0]
        events = (await http.get("/api/sessions/api-1/events?follow=0")).text
        assert with_activity["last_activity"] > with_activity["started_at"] and with_activity["tokens"] > 0
        assert json.loads(parse_sse(events)[-1][1])["created_at"] == with_activity["last_activity"]
        unknown = await http.get("/api/sessions?include=last_activity,secrets")
        assert (unknown.status_code, unknown.json()["error"]["code"]) == (400, "bad_request")
        assert "secrets" in unknown.json()["error"]["message"]

        sent = await http.post("/api/sessions/api-1/messages", json={"text": DEMO_TURNS[1], "message_id": "m-2"})
        again = await http.post("/api/sessions/api-1/messages", json={"text": DEMO_TURNS[1], "message_id": "m-2"})
        assert sent.json() == again.json() == {"queued": True, "message_id": "m-2"}
        assert (await http.post("/api/sessions/api-1/messages", json={"text": "  "})).status_code == 400
        interrupt = sessions.wait_for_pending_interrupt("api-1", "refund_order")
        pending = (await http.get("/api/sessions/api-1")).json()["pending_interrupts"]
        assert [item["interrupt_id"] for item in pending] == [interrupt.interrupt_id]
        assert pending[0]["deadline"] is not None and 0 < pending[0]["seconds_left"] <= DEADLINE_MS / 1000
        assert len(pending[0]["arguments_sha256"]) == 64
        listed = (await http.get(f"/api/sessions?flow_type={flow.get_flow_type()}")).json()["sessions"]
        assert listed[0]["pending_approvals"] == 1 and listed[0]["next_deadline"] == pending[0]["deadline"]
        path = f"/api/sessions/api-1/interrupts/{interrupt.interrupt_id}"
        assert (await http.post(path, json={"approved": "yes"})).status_code == 400
        assert (await http.post(path, json={"approved": True})).json() == {"resolved": True, "approved": True,
                                                                           "edited": False}
        late = await http.post(path, json={"approved": True})
        assert (late.status_code, late.json()["error"]["code"]) == (409, "interrupt_not_pending")
        sessions.wait_for_completed_turns("api-1", 2)
        assert refunds(tmp_path) == 1
        assert sessions.snapshot("api-1").messages[-1].text == "Done: Refunded 19.99 for order 42."

        retained = parse_sse((await http.get("/api/sessions/api-1/events?follow=0")).text)
        assert len(retained) > 5 and all(event_id for event_id, _ in retained)
        resumed = parse_sse((await http.get("/api/sessions/api-1/events?follow=0",
                                            headers={"Last-Event-ID": str(retained[2][0])})).text)
        assert resumed == retained[3:]
        page = (await http.get("/api/sessions/api-1/messages?limit=2")).json()
        assert len(page["messages"]) == 2 and page["next_before_sequence"] is not None

        assert (await http.post("/api/sessions/api-1/compact")).json() == {"compacting": False}
        assert (await http.post("/api/sessions/api-1/stop")).json() == {"stopped": True}
        stopped = (await http.get("/api/sessions/api-1")).json()
        assert stopped["run_status"] in ("canceled", "terminated", "running") and stopped["state"] is not None
        # a stopped session's transcript still reads (query-only RPCs answer for a terminal run)
        assert stopped["worker"] is True and stopped["transcript"][-1]["text"] == "Done: Refunded 19.99 for order 42."
        refused = await http.post("/api/sessions/api-1/messages", json={"text": "still there?"})
        assert (refused.status_code, refused.json()["error"]["code"]) == (409, "session_not_running")

        # a closed run's summary is read once: the list answers it again without reading the server
        listing = f"/api/sessions?flow_type={flow.get_flow_type()}&include=last_activity"
        sessions.sessions.wait_for(  # the search index saw the run close
            "api-1", StateCondition(description="run closed", predicate=lambda _: sessions.sessions.is_stopped("api-1")))
        (closed,) = (await http.get(listing)).json()["sessions"]
        assert closed["run_status"] == "canceled" and closed["closed_at"] is not None
        client = await app.state.backend.client_for(flow.get_flow_type())

        async def no_reads(*args: object) -> NoReturn:
            raise AssertionError("a closed run was read again")

        client.overview = no_reads
        assert (await http.get(listing)).json()["sessions"] == [closed]

    run_with_app(dex_engine.server_address, body)


def test_operator_actions_through_the_api(dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory,
                                          agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """Edit then approve (a stale hash, and arguments the tool's schema refuses, are 422 with the
    session's reason and lose nothing), reject with a message and an audit, extend a deadline, stop
    with a reason; every bad body is a 400 naming the field, before anything is sent."""
    flow = build_console_flow(tmp_path, unique_flow_type("ConsoleActions"), gated=False)
    sessions = agent_sessions(agent_environment([flow]), flow)
    sessions.start_session("edit-1", DEMO_TURNS[1])
    sessions.start_session("reject-1", DEMO_TURNS[1])
    interrupt = sessions.wait_for_pending_interrupt("edit-1", "refund_order")

    async def body(http: httpx.AsyncClient, app: Starlette) -> None:
        (pending,) = (await http.get("/api/sessions/edit-1")).json()["pending_interrupts"]
        path = f"/api/sessions/edit-1/interrupts/{interrupt.interrupt_id}"
        edited = '{"order_id": 42, "amount": 5.0}'
        for bad, reason in (({"approved": False, "edited_arguments": edited}, "go with an approval"),
                            ({"approved": True, "edited_arguments": "{nope"}, "is not JSON"),
                            ({"approved": True, "edited_arguments": "[42]"}, "must be a JSON object"),
                            ({"approved": True, "approver": 7}, "approver must be a string"),
                            ({"approved": True, "approvr": "ana"}, "unknown field(s) ['approvr']")):
            answer = await http.post(path, json=bad)
            assert (answer.status_code, answer.json()["error"]["code"]) == (400, "bad_request"), bad
            assert reason in answer.json()["error"]["message"], bad

        stale = await http.post(path, json={"approved": True, "edited_arguments": edited, "approver": "ana",
                                            "arguments_sha256": "0" * 64})
        assert (stale.status_code, stale.json()["error"]["code"]) == (422, "refused")
        assert "the approver saw other arguments" in stale.json()["error"]["message"]
        schema = await http.post(path, json={"approved": True, "edited_arguments": '{"order_id": "forty-two"}',
                                             "arguments_sha256": pending["arguments_sha256"]})
        assert (schema.status_code, schema.json()["error"]["code"]) == (422, "refused")
        assert schema.json()["error"]["message"].startswith(
            "the session refused the edited arguments (the approval is pending again): ")
        assert "order_id" in schema.json()["error"]["message"]  # the tool's own schema says why
        assert [(item["interrupt_id"], item["arguments"]) for item in (await http.get("/api/sessions/edit-1")).json()
                ["pending_interrupts"]] == [(interrupt.interrupt_id, interrupt.arguments)]  # both lost nothing

        extend = "/api/sessions/edit-1/extend_deadline"
        wrong_extensions: list[tuple[dict[str, object], str]] = [
            ({"deadline_ms": 60_000}, "interrupt_id is required"),
            ({"interrupt_id": interrupt.interrupt_id, "deadline_ms": "7200000"}, "integer >= 1"),
            ({"interrupt_id": interrupt.interrupt_id, "deadline_ms": 0}, "integer >= 1"),
            ({"interrupt_id": interrupt.interrupt_id, "deadline_ms": 1, "why": "x"}, "unknown")]
        for wrong, reason in wrong_extensions:
            answer = await http.post(extend, json=wrong)
            assert (answer.status_code, answer.json()["error"]["code"]) == (400, "bad_request"), wrong
            assert reason in answer.json()["error"]["message"], wrong
        earlier = await http.post(extend, json={"interrupt_id": interrupt.interrupt_id, "deadline_ms": 60_000})
        assert (earlier.status_code, earlier.json()["error"]["code"]) == (409, "not_applied")
        later = await http.post(extend, json={"interrupt_id": interrupt.interrupt_id, "deadline_ms": 7_200_000})
        assert later.json() == {"extended": True, "interrupt_id": interrupt.interrupt_id, "deadline_ms": 7_200_000}
        (moved,) = (await http.get("/api/sessions/edit-1")).json()["pending_interrupts"]
        assert moved["seconds_left"] > DEADLINE_MS / 1000

        approved = await http.post(path, json={"approved": True, "edited_arguments": edited, "approver": "ana",
                                               "reason": "partial refund", "arguments_sha256": pending["arguments_sha256"]})
        assert approved.json() == {"resolved": True, "approved": True, "edited": True, "checked": True}
        sessions.wait_for_completed_turns("edit-1", 1)
        (refunded,) = (tmp_path / REFUNDS_LOG).read_text().splitlines()
        assert refunded.startswith("order=42 amount=5.00 ")  # once, as edited
        events = [json.loads(data) for _, data in parse_sse((await http.get("/api/sessions/edit-1/events?follow=0")).text)]
        (resolved,) = [event["payload"] for event in events if event["type"] == "interrupt_resolved"]
        assert (resolved["approver"], resolved["reason"], resolved["edited_arguments"]) == ("ana", "partial refund", edited)

        rejected_interrupt = sessions.wait_for_pending_interrupt("reject-1", "refund_order")
        rejected = await http.post(f"/api/sessions/reject-1/interrupts/{rejected_interrupt.interrupt_id}",
                                   json={"approved": False, "rejection_message": "no refunds on Sundays",
                                         "approver": "bo"})
        assert rejected.json() == {"resolved": True, "approved": False, "edited": False}
        sessions.wait_for_completed_turns("reject-1", 1)
        assert refunds(tmp_path) == 1
        rejected_events = parse_sse((await http.get("/api/sessions/reject-1/events?follow=0")).text)
        assert any("no refunds on Sundays" in data for _, data in rejected_events)

        assert (await http.post("/api/sessions/reject-1/compact", json={"now": True})).status_code == 400
        assert (await http.post("/api/sessions/reject-1/stop", json={"reason": 5})).status_code == 400
        stopped = await http.post("/api/sessions/reject-1/stop", json={"reason": "ticket closed"})
        assert stopped.json() == {"stopped": True}
        again = await http.post("/api/sessions/reject-1/stop", json={"reason": "ticket closed"})
        assert (again.status_code, again.json()["error"]["code"]) == (409, "session_not_running")

    run_with_app(dex_engine.server_address, body)



def test_rewind_and_fork_through_the_api(dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory,
                                         agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_console_flow(tmp_path, unique_flow_type("ConsoleRewind"), gated=False)
    sessions = agent_sessions(agent_environment([flow]), flow)
    sessions.start_session("rewind-1", DEMO_TURNS[0])
    sessions.wait_for_completed_turns("rewind-1", 1)
    sessions.send_user_message("rewind-1", "Hello")
    sessions.wait_for_completed_turns("rewind-1", 2)
    sessions.start_session("taken", "Hello")

    async def body(http: httpx.AsyncClient, app: Starlette) -> None:
        before = (await http.get("/api/sessions/rewind-1")).json()
        assert "rewind" in before["actions"] and "fork" in before["actions"]
        wrong_bodies: list[tuple[str, dict[str, object], int, str]] = [
            ("rewind", {"to_turn": -1}, 400, "to_turn must be an integer >= 0"),
            ("rewind", {"reason": "oops"}, 400, "to_turn is required"),
            ("rewind", {"to_turn": 9}, 409, "not_applied"),
            ("fork", {"at_turn": 1}, 400, "new_session_id is required"),
            ("fork", {"at_turn": 1, "new_session_id": "rewind-1"}, 400, "must differ"),
            ("fork", {"at_turn": 1, "new_session_id": "taken"}, 409, "session_exists")]
        for action, wrong, status, reason in wrong_bodies:
            answer = await http.post(f"/api/sessions/rewind-1/{action}", json=wrong)
            assert answer.status_code == status, (action, wrong, answer.text)
            assert reason in answer.text, (action, wrong, answer.text)

        forked = await http.post("/api/sessions/rewind-1/fork", json={"at_turn": 1, "new_session_id": "fork-1"})
        assert forked.status_code == 200 and forked.json()["session_id"] == "fork-1" and forked.json()["forked"]
        sessions.wait_for_turns("fork-1", 0)
        seeded = (await http.get("/api/sessions/fork-1")).json()
        assert [item["text"] for item in seeded["transcript"] if item["role"] == "user"] == [DEMO_TURNS[0]]

        assert (await http.get("/api/sessions/rewind-1/rewind")).json()["error"]["message"] == "to_turn is required"
        beyond = await http.get("/api/sessions/rewind-1/rewind?to_turn=9")
        assert (beyond.status_code, beyond.json()["error"]["code"]) == (409, "not_applied")
        preview = await http.get("/api/sessions/rewind-1/rewind?to_turn=1")
        assert preview.json() == {"to_turn": 1, "removed_turn_count": 1, "tool_calls": []}  # it changed nothing:
        assert (await http.get("/api/sessions/rewind-1")).json()["state"]["turn_count"] == 2
        rewound = await http.post("/api/sessions/rewind-1/rewind", json={"to_turn": 1, "reason": "wrong answer"})
        assert rewound.status_code == 200, rewound.text
        assert {key: rewound.json()[key] for key in ("rewound", "to_turn", "removed_turn_count", "tool_calls")} == \
            {"rewound": True, "to_turn": 1, "removed_turn_count": 1, "tool_calls": []}
        after = (await http.get("/api/sessions/rewind-1")).json()
        assert after["state"]["turn_count"] == 1
        assert [item["text"] for item in after["transcript"] if item["role"] == "user"] == [DEMO_TURNS[0]]

    run_with_app(dex_engine.server_address, body)


def test_cancel_a_turn_and_a_tool_call_through_the_api(dex_engine: PrivateDexEngine,
                                                        agent_environment: AgentEnvironmentFactory,
                                                        agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_console_flow(tmp_path, unique_flow_type("ConsoleCancel"))
    sessions = agent_sessions(agent_environment([flow]), flow)
    gate = FileGate(tmp_path, MODEL_GATE)
    sessions.start_session("cancel-turn", DEMO_TURNS[0])
    gate.wait_until_reached()  # the lookup's answer is mid-stream: the turn runs
    sessions.start_session("cancel-call", DEMO_TURNS[1])
    interrupt = sessions.wait_for_pending_interrupt("cancel-call", "refund_order")

    async def body(http: httpx.AsyncClient, app: Starlette) -> None:
        running = (await http.get("/api/sessions/cancel-turn")).json()
        assert "cancel_turn" in running["actions"] and running["state"]["current_turn_id"] == "turn-1"
        no_reason = await http.post("/api/sessions/cancel-turn/cancel_turn", json={"turn_id": "turn-1"})
        assert (no_reason.status_code, no_reason.json()["error"]["message"]) == (400, "reason is required")
        canceled = await http.post("/api/sessions/cancel-turn/cancel_turn",
                                   json={"turn_id": "turn-1", "reason": "the customer left"})
        assert canceled.json() == {"canceled": True, "turn_id": "turn-1"}
        sessions.sessions.wait_for(
            "cancel-turn", StateCondition(description="turn-1 ended", predicate=lambda state: state.current_turn_id is None))
        again = await http.post("/api/sessions/cancel-turn/cancel_turn",
                                json={"turn_id": "turn-1", "reason": "the customer left"})
        assert (again.status_code, again.json()["error"]["code"]) == (409, "not_applied")

        cancel_call = "/api/sessions/cancel-call/cancel_tool_call"
        assert (await http.post(cancel_call, json={"reason": "no"})).json()["error"]["message"] == \
            "tool_call_id is required"
        opened = (await http.get("/api/sessions/cancel-call")).json()["open_tool_calls"]
        assert [(item["tool_call_id"], item["status"]) for item in opened] == [(interrupt.tool_call_id,
                                                                                "awaiting_approval")]
        stopped = await http.post(cancel_call, json={"tool_call_id": interrupt.tool_call_id, "reason": "not today"})
        assert stopped.json() == {"canceled": True, "tool_call_id": interrupt.tool_call_id}
        sessions.wait_for_completed_turns("cancel-call", 1)
        after = (await http.get("/api/sessions/cancel-call")).json()
        assert refunds(tmp_path) == 0 and after["pending_interrupts"] == [] and after["open_tool_calls"] == []
        late = await http.post(cancel_call, json={"tool_call_id": interrupt.tool_call_id, "reason": "not today"})
        assert (late.status_code, late.json()["error"]["code"]) == (409, "not_applied")

    try:
        run_with_app(dex_engine.server_address, body)
    finally:
        gate.release()


def test_settle_an_unknown_outcome_through_the_api(dex_engine: PrivateDexEngine,
                                                   agent_environment: AgentEnvironmentFactory,
                                                   agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = lost_refund_flow(tmp_path, prefix="ConsoleSettle")
    sessions = agent_sessions(agent_environment([flow]), flow)
    sessions.start_session("settle-1", LOST_REFUND)
    sessions.wait_for_completed_turns("settle-1", 1)

    async def body(http: httpx.AsyncClient, app: Starlette) -> None:
        detail = (await http.get("/api/sessions/settle-1")).json()
        (lost,) = [item["tool"] for item in detail["transcript"] if item["tool"] and item["role"] == "assistant"]
        assert (lost["tool_call_id"], lost["status"], lost["settlement"]) == ("call-lost", "outcome_unknown", None)
        unsettled_page = (await http.get("/ui/sessions/settle-1")).text
        assert 'data-action-name="resolve_tool_outcome"' in unsettled_page and "The outcome is unknown" in unsettled_page
        settle = "/api/sessions/settle-1/resolve_tool_outcome"
        good = {"tool_call_id": "call-lost", "status": "succeeded", "output_or_message": "refund rf_9 found",
                "resolver": "bo@ops", "reason": "bank statement"}
        wrong_bodies: list[tuple[dict[str, object], int, str]] = [
            ({**good, "status": "maybe"}, 400, "status must be one of ['succeeded', 'failed']"),
            ({key: value for key, value in good.items() if key != "resolver"}, 400, "resolver is required"),
            ({**good, "tool_call_id": "nope"}, 422, "no tool call 'nope' of this session has an unknown outcome")]
        for wrong, status, reason in wrong_bodies:
            answer = await http.post(settle, json=wrong)
            assert (answer.status_code, reason in answer.json()["error"]["message"]) == (status, True), answer.text
        assert (await http.post(settle, json=good)).json() == {"settled": True, "tool_call_id": "call-lost",
                                                               "status": "succeeded"}
        sessions.wait_for_completed_turns("settle-1", 2)
        again = await http.post(settle, json={**good, "status": "failed", "resolver": "ana"})
        assert (again.status_code, again.json()["error"]["code"]) == (422, "refused")
        assert "was already settled as succeeded by bo@ops" in again.json()["error"]["message"]
        settled = (await http.get("/api/sessions/settle-1")).json()
        (tool,) = [item["tool"] for item in settled["transcript"] if item["tool"] and item["role"] == "assistant"]
        assert (tool["status"], tool["settlement"]) == ("succeeded", {"status": "succeeded", "settled_by": "operator",
                                                                      "resolver": "bo@ops", "reason": "bank statement"})
        page = (await http.get("/ui/sessions/settle-1")).text
        assert "outcome settled as succeeded (operator) by bo@ops · bank statement" in page
        assert 'data-action-name="resolve_tool_outcome"' not in page

    run_with_app(dex_engine.server_address, body)
