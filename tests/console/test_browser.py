"""The console in a real browser (headless Chromium): a demo session end to end, escaping, 401, 404."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import APIResponse, Browser, Dialog, Route, expect

from dex_agents.demo.subagent_agent import build_support_flows
from dex_agents.demo.support_script import DEMO_TURNS, REFUNDS_LOG
from dex_agents.pure.values.session import AgentStatus
from dex_agents.serving.gate import FileGate
from dex_agents.testing.private_engine import PrivateDexEngine
from dex_agents.testing.pytest_plugin import AgentEnvironmentFactory, AgentSessionsFactory
from tests.console.agents import MODEL_GATE, PAYLOAD, build_console_flow, refunds
from tests.console.browser import chromium, laptop_page, screenshot_path, served_console
from tests.shell.agents import unique_flow_type
from tests.shell.scenario_flows import wait_for_pending_approval

pytestmark = pytest.mark.slow

APPROVER = 'ana"><img src=x onerror="window.__pwned = 3">'
"""An approver's name is operator text: escaped like the rest."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def test_a_demo_session_end_to_end(browser: Browser, dex_engine: PrivateDexEngine,
                                   agent_environment: AgentEnvironmentFactory, agent_sessions: AgentSessionsFactory,
                                   tmp_path: Path) -> None:
    flow = build_console_flow(tmp_path, unique_flow_type("SupportAgent"))
    sessions = agent_sessions(agent_environment([flow]), flow)
    session_id = f"demo-{uuid.uuid4().hex[:8]}"
    gate = FileGate(tmp_path, MODEL_GATE)
    for number in (1, 2):  # two finished sessions beside it, so the list has rows to show
        sessions.start_session(f"{session_id}-earlier-{number}", "Hello")
    sessions.start_session(session_id, DEMO_TURNS[0])
    with served_console(dex_engine.server_address) as url, laptop_page(browser) as page:
        page.goto(f"{url}?flow_type={flow.get_flow_type()}")
        row = page.locator(f'tr[data-session-id="{session_id}"]')
        expect(row).to_be_visible()
        row.get_by_role("link").click()
        expect(page.locator(".session-head h1")).to_have_text(session_id)

        gate.wait_until_reached()  # the lookup's answer streamed its first words and waits here
        live = page.locator("#live-text")
        expect(live).to_contain_text("Here is what I found:")
        assert sessions.read_agent_state(session_id).status is AgentStatus.RUNNING_MODEL  # type: ignore[union-attr]
        expect(live).not_to_contain_text("19.99.")
        gate.release()
        tool = page.locator("details.tool-call", has_text="lookup_order")
        expect(tool).to_contain_text("read")
        expect(tool).to_contain_text("succeeded")
        expect(tool).to_contain_text("idempotency key")
        expect(page.locator("details.tool-output", has_text="lookup_order")).to_contain_text("shipped on 2026-11-28")
        expect(page.locator(".message.assistant")).to_contain_text("arriving 2026-12-02; total 19.99.")

        page.evaluate("window.__notReloaded = true")
        page.fill("#send-text", DEMO_TURNS[1])
        page.press("#send-text", "Enter")
        approval = page.locator(".approval", has_text="refund_order")
        expect(approval).to_contain_text("non_idempotent_write")
        expect(approval.locator("time.countdown")).to_have_text(re.compile(r"0h 59m \d\ds left|1h 00m 00s left"))
        expect(approval).to_contain_text('"amount":19.99')
        page.screenshot(path=str(screenshot_path(tmp_path, "console-session.png")), full_page=True)
        approval.get_by_role("button", name="Approve").click()
        expect(page.locator(".message.assistant").last).to_have_text(
            re.compile(r"Done: Refunded 19\.99 for order 42\."))
        expect(page.locator(".approval")).to_have_count(0)
        assert page.evaluate("window.__notReloaded") is True
        assert refunds(tmp_path) == 1

        sessions.wait_for_completed_turns(f"{session_id}-earlier-1", 1)
        sessions.start_session(f"{session_id}-waiting", DEMO_TURNS[1])  # one waiting on its approval in the list
        sessions.wait_for_pending_interrupt(f"{session_id}-waiting", "refund_order")
        page.goto(f"{url}?flow_type={flow.get_flow_type()}")
        expect(page.locator("table.sessions tbody tr")).to_have_count(4)
        expect(page.locator(f'tr[data-session-id="{session_id}-waiting"] time.countdown')).to_contain_text("left")
        page.screenshot(path=str(screenshot_path(tmp_path, "console-list.png")), full_page=True)


def test_a_refused_edit_shows_its_reason_even_when_the_page_refreshed_before_the_answer(
        browser: Browser, dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory,
        agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """The refusal's events refresh the page while the approve request still waits for its answer (the
    console answers once it saw the refusal): the answer is held until that refresh has landed, and its
    reason must still show in the approval box the refresh put on the page."""
    flow = build_console_flow(tmp_path, unique_flow_type("ConsoleEditRace"), gated=False)
    sessions = agent_sessions(agent_environment([flow]), flow)
    sessions.start_session("edit-race", DEMO_TURNS[1])
    sessions.wait_for_pending_interrupt("edit-race", "refund_order")
    with served_console(dex_engine.server_address) as url, laptop_page(browser) as page:
        held: list[tuple[Route, APIResponse]] = []

        def hold_answer(route: Route) -> None:
            held.append((route, route.fetch()))  # the server answered; the page does not have it yet

        page.goto(f"{url}sessions/edit-race")
        approval = page.locator(".approval", has_text="refund_order")
        approval.get_by_role("button", name="Edit arguments…").click()
        approval.locator("textarea.edited-arguments").fill('{"order_id": "forty-two", "amount": 5.0}')
        page.route("**/interrupts/**", hold_answer)
        page.evaluate("""() => {  // the box clicked is the one marked, whatever refreshes came before
            const box = document.querySelector('.approval');
            box.dataset.beforeRefresh = 'yes';
            box.querySelector('button[data-action="approve-edited"]').click();
        }""")
        # the refusal's events refresh the page: a new approval box replaces the one clicked
        page.wait_for_function(
            "() => document.querySelector('.approval') && !document.querySelector('.approval[data-before-refresh]')")
        deadline = time.monotonic() + 30
        while not held:  # the handler runs while Playwright dispatches: poll it in short waits
            assert time.monotonic() < deadline, "the server never answered the approve request"
            page.wait_for_timeout(20)
        route, answer = held[0]
        route.fulfill(response=answer)
        expect(approval.locator(".approval-error")).to_contain_text("the session refused the edited arguments")


def test_edit_arguments_then_approve_and_the_other_operator_actions(
        browser: Browser, dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory,
        agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """An edit the tool's schema refuses shows the session's reason and keeps what was typed; the
    deadline moves; an edit it takes runs the refund once with the edited arguments and the reply
    appears without a reload; a fork links its new session; a rewind says first what it removes; the
    session stops with a reason."""
    flow = build_console_flow(tmp_path, unique_flow_type("ConsoleEdit"), gated=False)
    sessions = agent_sessions(agent_environment([flow]), flow)
    sessions.start_session("edit-ui", DEMO_TURNS[1])
    sessions.wait_for_pending_interrupt("edit-ui", "refund_order")
    with served_console(dex_engine.server_address) as url, laptop_page(browser) as page:
        asked: list[str] = []

        def accept(dialog: Dialog) -> None:
            asked.append(dialog.message)
            dialog.accept()

        page.on("dialog", accept)
        page.goto(f"{url}sessions/edit-ui")
        approval = page.locator(".approval", has_text="refund_order")
        expect(approval).to_contain_text('"amount":19.99')
        page.evaluate("window.__notReloaded = true")
        open_call = page.locator(".open-call", has_text="refund_order")
        expect(open_call).to_contain_text("awaiting_approval")
        expect(open_call.get_by_role("button", name="Cancel call")).to_be_visible()  # open, in the running turn
        expect(page.locator('form[data-action-name="cancel_turn"] input[name="turn_id"]')).to_have_value("turn-1")

        approval.get_by_role("button", name="Edit arguments…").click()
        editor = approval.locator("textarea.edited-arguments")
        expect(editor).to_be_visible()
        editor.fill('{"order_id": "forty-two", "amount": 5.0}')
        approval.get_by_role("button", name="Approve with these arguments").click()
        expect(approval.locator(".approval-error")).to_contain_text("the session refused the edited arguments")
        expect(approval.locator(".approval-error")).to_contain_text("order_id")
        expect(editor).to_have_value('{"order_id": "forty-two", "amount": 5.0}')  # kept, to correct it

        approval.get_by_placeholder("minutes from now").fill("120")
        approval.get_by_role("button", name="Extend deadline").click()
        expect(approval.locator("time.countdown")).to_have_text(re.compile(r"1h 59m \d\ds left|2h 00m 00s left"))
        expect(editor).to_be_visible()  # the refresh kept the open editor and its text
        expect(editor).to_have_value('{"order_id": "forty-two", "amount": 5.0}')

        editor.fill('{"order_id": 42, "amount": 5.0}')
        approval.get_by_placeholder("approver").fill(APPROVER)
        approval.get_by_placeholder("reason (audit)").fill("partial refund")
        approval.get_by_role("button", name="Approve with these arguments").click()
        expect(page.locator(".message.assistant").last).to_contain_text("Refunded 5.00 for order 42.")
        expect(page.locator(".approval")).to_have_count(0)
        expect(page.locator(".open-call")).to_have_count(0)  # nothing open, no turn running
        expect(page.get_by_role("button", name="Cancel turn")).to_have_count(0)
        assert page.evaluate("window.__notReloaded") is True
        (refunded,) = (tmp_path / REFUNDS_LOG).read_text().splitlines()
        assert refunded.startswith("order=42 amount=5.00 ")  # once, as edited
        refund = page.locator("details.tool-call", has_text="refund_order")
        expect(refund).to_contain_text(f"approved with edited arguments by {APPROVER} · partial refund; it ran with:")
        expect(refund.locator("pre.edited")).to_have_text('{"order_id": 42, "amount": 5.0}')
        assert page.evaluate("window.__pwned === undefined") and page.locator("main img").count() == 0

        sessions.wait_for_completed_turns("edit-ui", 1)
        page.get_by_placeholder("at turn").fill("1")
        page.get_by_placeholder("new session ID").fill("edit-ui-fork")
        page.get_by_role("button", name="Fork").click()
        expect(page.locator("#notice")).to_have_text("Forked at turn 1 into edit-ui-fork")
        expect(page.locator("#notice a")).to_have_attribute("href", "/sessions/edit-ui-fork")

        sessions.send_user_message("edit-ui", "Hello")
        sessions.wait_for_completed_turns("edit-ui", 2)
        page.get_by_placeholder("to turn").fill("1")
        page.get_by_role("button", name="Rewind").click()  # asks first, with what it would remove
        expect(page.locator("#notice")).to_have_text("Rewound to turn 1: 1 turn(s) removed")
        assert asked[-1] == "Rewind to turn 1? It removes 1 turn(s)."
        expect(page.locator(".session-head")).to_contain_text("1 turns")

        page.get_by_placeholder("reason (kept by Dex)").fill("ticket closed")
        page.get_by_role("button", name="Stop session").click()
        expect(page.locator(".session-head")).to_contain_text("Dex run: canceled")
        assert sessions.sessions.is_stopped("edit-ui") is True


def test_a_sub_agents_approval_is_answered_from_the_parents_page(
        browser: Browser, dex_engine: PrivateDexEngine, agent_environment: AgentEnvironmentFactory,
        agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    """The sub-agent demo: the parent's page lists its child session and the child's refund approval;
    approving it there runs the refund once and the parent's reply appears without a reload."""
    parent, child = build_support_flows(state_directory=tmp_path)
    sessions = agent_sessions(agent_environment([parent, child]), parent)
    session_id = f"parent-{uuid.uuid4().hex[:8]}"
    sessions.start_session(session_id, DEMO_TURNS[1])
    held = wait_for_pending_approval(sessions.sessions, session_id)
    with served_console(dex_engine.server_address) as url, laptop_page(browser) as page:
        detail = page.request.get(f"{url}api/sessions/{session_id}").json()
        assert [(item["session_id"], item["flow_type"]) for item in detail["children"]] == [(held.session_id,
                                                                                             "BillingAgent")]
        assert [(item["session_id"], item["interrupt_id"]) for item in detail["child_approvals"]] == [
            (held.session_id, held.interrupt.interrupt_id)]
        page.goto(f"{url}sessions/{session_id}")
        expect(page.locator("section.children")).to_contain_text(held.session_id)
        approval = page.locator(f'.approval[data-session-id="{held.session_id}"]')
        expect(approval).to_contain_text(f"in sub-agent session {held.session_id}")
        page.evaluate("window.__notReloaded = true")
        approval.get_by_role("button", name="Approve").click()
        expect(page.locator(".message.assistant").last).to_contain_text("Refunded 19.99 for order 42.")
        expect(page.locator(".approval")).to_have_count(0)
        assert page.evaluate("window.__notReloaded") is True
        assert refunds(tmp_path) == 1


def test_session_text_is_escaped_everywhere(browser: Browser, dex_engine: PrivateDexEngine,
                                            agent_environment: AgentEnvironmentFactory,
                                            agent_sessions: AgentSessionsFactory, tmp_path: Path) -> None:
    flow = build_console_flow(tmp_path, unique_flow_type("ConsoleEscaping"), gated=False)
    sessions = agent_sessions(agent_environment([flow]), flow)
    sessions.start_session("escaping", PAYLOAD)
    sessions.wait_for_completed_turns("escaping", 1)
    with served_console(dex_engine.server_address) as url, laptop_page(browser) as page:
        dialogs: list[str] = []

        def record(dialog: Dialog) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", record)
        page.goto(f"{url}sessions/escaping")
        expect(page.locator(".message.user")).to_contain_text(PAYLOAD)
        expect(page.locator("details.tool-call pre.arguments")).to_contain_text("<script>window.__pwned = 1</script>")
        expect(page.locator("details.tool-output pre.output")).to_contain_text(f"note kept: {PAYLOAD}")
        expect(page.locator(".message.assistant")).to_contain_text(f"Noted: note kept: {PAYLOAD}")
        page.goto(f"{url}?flow_type={flow.get_flow_type()}")
        expect(page.locator('tr[data-session-id="escaping"]')).to_be_visible()
        page.goto(f"{url}sessions/escaping")
        expect(page.locator(".message.user")).to_contain_text(PAYLOAD)
        assert page.evaluate("window.__pwned === undefined")
        assert page.locator("main script, main img").count() == 0
        assert dialogs == []


def test_unauthenticated_401_and_unknown_session_404(browser: Browser, dex_engine: PrivateDexEngine,
                                                     tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("browser-token")
    from dex import FileCredential

    with served_console(dex_engine.server_address, FileCredential(token_file)) as url, laptop_page(browser) as page:
        answer = page.request.get(f"{url}api/sessions")
        assert answer.status == 401 and answer.json()["error"]["code"] == "unauthenticated"
        page.goto(url)
        expect(page.locator("#notice")).to_contain_text("needs its bearer token")
        page.fill("#token", "browser-token")
        page.press("#token", "Enter")
        expect(page.locator("table.sessions")).to_be_visible()
        missing = page.request.get(f"{url}api/sessions/no-such-session",
                                   headers={"Authorization": "Bearer browser-token"})
        assert missing.status == 404 and missing.json()["error"]["code"] == "session_not_found"
        page.goto(f"{url}sessions/no-such-session")
        expect(page.locator("#notice")).to_contain_text("session_not_found")
