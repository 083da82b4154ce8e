"""Server-rendered HTML of the console: the page shells and the fragments the page script swaps in.

Invariants:
    * Every text that a user, a model, a tool or the server wrote goes through ``esc`` (``html.escape``
      with quotes), in element content and in attribute values alike; nothing else is interpolated.
    * The shells carry no session data (they are public); the fragments are rendered from the same
      JSON the API answers (``api.session_detail``, ``api.list_sessions``), so page and API agree.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Final

from dex_agents.console.actions import OPERATOR_ACTIONS, ActionField, OperatorAction
from dex_agents.console.views import Json

__all__ = ["esc", "list_fragment", "session_fragment", "shell"]

STATUSES: Final = ("waiting_for_user_message", "running_model", "running_tools", "running", "completed",
                   "canceled", "terminated", "failed")


def esc(value: object) -> str:
    """``value`` as HTML text, safe in content and in quoted attributes."""
    return html.escape("" if value is None else str(value), quote=True)


def shell(title: str, view: str, session_id: str = "") -> str:
    """A page without data: the script fetches its fragment with the bearer token."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title><link rel="stylesheet" href="/static/console.css">
<script type="module" src="/static/console.js"></script></head>
<body data-view="{esc(view)}" data-session-id="{esc(session_id)}">
<header><a class="brand" href="/">dex-agents console</a><span id="connection" class="muted"></span>
<form id="token-form" hidden><input id="token" type="password" placeholder="bearer token" autocomplete="off">
<button>Use token</button></form></header>
<main><div id="notice" role="status"></div><section id="content"><p class="muted">Loading…</p></section>
{'<section id="live" hidden><h2>Live</h2><div id="live-text" class="live-text"></div><ol id="event-log"></ol></section>' if view == "session" else ""}
</main></body></html>"""


def _select(name: str, options: Iterable[str], chosen: str | None) -> str:
    items = "".join(f'<option value="{esc(o)}"{" selected" if o == chosen else ""}>{esc(o) or "all"}</option>'
                    for o in ("", *options))
    return f'<label>{esc(name.replace("_", " "))} <select name="{esc(name)}">{items}</select></label>'


def _countdown(deadline: str | None, seconds_left: float | None) -> str:
    if deadline is None:
        return '<span class="muted">no deadline</span>'
    return (f'<time class="countdown" datetime="{esc(deadline)}" data-deadline="{esc(deadline)}">'
            f'{esc(_duration(seconds_left))}</time>')


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    whole = int(seconds)
    return "expired" if whole <= 0 else f"{whole // 3600}h {whole % 3600 // 60:02d}m {whole % 60:02d}s left"


def list_fragment(page: Json, flow_types: Sequence[str], flow_type: str | None, status: str | None) -> str:
    """The sessions table with its filters."""
    rows = "".join(f"""<tr data-session-id="{esc(s['session_id'])}">
<td><a href="/sessions/{esc(s['session_id'])}">{esc(s['session_id'])}</a></td><td>{esc(s['flow_type'])}</td>
<td><span class="badge {esc(s['status'] or s['run_status'])}">{esc(s['status'] or '—')}</span>
<span class="muted">{esc(s['run_status'])}</span></td>
<td class="num">{'<strong class="approvals">' + esc(s['pending_approvals']) + '</strong> ' +
                  _countdown(s['next_deadline'], s['seconds_left']) if s['pending_approvals'] else '0'}</td>
<td class="num">{esc(s['turns'])}</td><td class="num">{esc(s['tokens'])}</td>
<td><time class="ago" datetime="{esc(s['last_activity'])}">{esc(s['last_activity'][:19].replace('T', ' '))}</time></td>
</tr>""" for s in page["sessions"])
    more = (f'<a class="more" href="/?page_token={esc(page["next_page_token"])}">older sessions →</a>'
            if page["next_page_token"] else "")
    return f"""<h1>Sessions</h1>
<form id="filters" class="filters">{_select("flow_type", flow_types, flow_type)}{_select("status", STATUSES, status)}</form>
<table class="sessions"><thead><tr><th>Session</th><th>Flow type</th><th>Status</th><th>Pending approvals</th>
<th>Turns</th><th>Tokens</th><th>Last activity</th></tr></thead>
<tbody>{rows or '<tr><td colspan="7" class="muted">No sessions.</td></tr>'}</tbody></table>{more}"""


def _usage(usage: Json) -> str:
    calls = "call" if usage["requests"] == 1 else "calls"
    return (f'{esc(usage["requests"])} {calls} · {esc(usage["input_tokens"])} in / '
            f'{esc(usage["output_tokens"])} out tokens')


def _field(field: ActionField, key: str, state: Json) -> str:
    """One input of an action's form; ``data-keep`` lets the page keep what was typed across refreshes."""
    if field.kind == "choice":
        options = "".join(f'<option value="{esc(choice)}">{esc(choice)}</option>' for choice in field.choices)
        return (f'<select name="{esc(field.name)}" aria-label="{esc(field.label)}" '
                f'data-keep="{esc(key)}/{esc(field.name)}">{options}</select>')
    kind = "number" if field.kind != "text" else "text"
    scale = (' data-scale="60000" min="0" step="any"' if field.kind == "milliseconds"
             else f' min="{field.minimum}" step="1"' if field.kind == "integer" else "")
    prefilled = state.get(field.prefill) if field.prefill else None
    value = "" if prefilled is None else f' value="{esc(prefilled)}"'
    keep = "" if prefilled is not None else f' data-keep="{esc(key)}/{esc(field.name)}"'
    return (f'<input name="{esc(field.name)}" type="{kind}" placeholder="{esc(field.label)}" '
            f'aria-label="{esc(field.label)}" data-kind="{esc(field.kind)}"{keep}{value}'
            f'{" required" if field.required else ""}{scale}>')


def _action_form(action: OperatorAction, key: str, state: Json, scope_value: str | None = None) -> str:
    """An action's form: its fields and its button (``console.js`` posts it as JSON); the scope's key
    (``interrupt_id``, ``tool_call_id``) is a hidden field."""
    hidden = "" if scope_value is None else (f'<input type="hidden" name="{esc(action.all_fields[0].name)}" '
                                             f'value="{esc(scope_value)}">')
    inputs = "".join(_field(field, f"{key}/{action.name}", state) for field in action.fields)
    return (f'<form class="action" data-action-name="{esc(action.name)}" data-confirm="{int(action.confirm)}" '
            f'title="{esc(action.description)}">{hidden}{inputs}<button>{esc(action.label)}</button></form>')


def _approval(item: Json, actions: Sequence[OperatorAction], holder: str) -> str:
    """A pending approval held by the session ``holder`` (this one, or a sub-agent's child session)."""
    interrupt_id = esc(item["interrupt_id"])
    keep = f"approval/{holder}/{item['interrupt_id']}"  # escaped where it is written
    child = item.get("session_id")
    where = "" if child is None else (f' <span class="muted">in sub-agent session</span> '
                                      f'<a href="/sessions/{esc(child)}">{esc(child)}</a>')
    return f"""<div class="approval" data-interrupt-id="{interrupt_id}" data-session-id="{esc(holder)}" data-arguments-sha256="{esc(item['arguments_sha256'])}">
<div><strong>Approve {esc(item['tool_name'])}</strong>{where} <span class="badge effect">{esc(item['effect'])}</span>
deadline {_countdown(item['deadline'], item['seconds_left'])} <span class="muted">{esc(item['deadline'] or '')}</span></div>
<pre class="arguments">{esc(item['arguments'])}</pre>
<div class="muted">arguments sha256 {esc(item['arguments_sha256'][:16])}… · {interrupt_id}</div>
<div class="answer"><input class="approver" placeholder="approver" aria-label="approver" data-keep="{esc(keep)}/approver">
<input class="reason" placeholder="reason (audit)" aria-label="reason" data-keep="{esc(keep)}/reason">
<button class="approve" data-action="approve">Approve</button>
<input class="reject-message" placeholder="why (told to the model)" aria-label="rejection message" data-keep="{esc(keep)}/reject">
<button class="reject" data-action="reject">Reject</button>
<button class="edit" data-action="edit" aria-expanded="false">Edit arguments…</button></div>
<div class="editor" hidden><label>Edited arguments (a JSON object; the tool's schema checks them)
<textarea class="edited-arguments" rows="4" spellcheck="false" data-keep="{esc(keep)}/edited">{esc(item['arguments'])}</textarea></label>
<button class="approve-edited" data-action="approve-edited">Approve with these arguments</button></div>
<div class="approval-error error" role="alert" data-keep-text="{esc(keep)}/error"></div>
<div class="operator">{"".join(_action_form(action, keep, {}, item["interrupt_id"]) for action in actions)}</div></div>"""


def _answer(approval: Json | None) -> str:
    """How the call's approval was answered: by whom and why, and the arguments it ran with if edited."""
    if not approval:
        return ""
    who = "".join(f" {label} {esc(approval[name])}" for label, name in (("by", "approver"), ("·", "reason"))
                  if approval.get(name))
    verdict = "approved" if approval.get("approved") else "rejected"
    edited = approval.get("edited_arguments")
    if edited is None:
        return f'<div class="answer-note muted">{verdict}{who}</div>'
    return (f'<div class="answer-note">{verdict} with edited arguments{who}; it ran with:</div>'
            f'<pre class="arguments edited">{esc(edited)}</pre>')


def _tool_call(message: Json) -> str:
    tool = message["tool"]
    attempts = tool["attempts"]

    return f"""<details class="tool-call" open data-tool-call-id="{esc(tool['tool_call_id'])}">
<summary><span class="role">tool call</span> <strong>{esc(tool['tool_name'])}</strong>
<span class="badge effect">{esc(tool['effect'] or '?')}</span> <span class="badge {esc(tool['status'])}">{esc(tool['status'] or '?')}</span>
<span class="muted">{esc(attempts)} attempt{'' if attempts == 1 else 's'}</span></summary>
<pre class="arguments">{esc(message['tool_arguments'])}</pre>{_answer(tool.get('approval'))}{_settlement(tool)}
<div class="muted">idempotency key {esc(tool['idempotency_key'])}</div></details>"""


_SETTLING: Final = tuple(action for action in OPERATOR_ACTIONS if action.scope == "unknown_outcome")


def _settlement(tool: Json) -> str:
    """How an unknown outcome was settled, or while it is unknown the forms that settle it."""
    settled = tool.get("settlement")
    if settled:
        by = "".join(f" {label} {esc(settled[name])}" for label, name in (("by", "resolver"), ("·", "reason"))
                     if settled.get(name))
        return (f'<div class="answer-note">outcome settled as {esc(settled.get("status"))} '
                f'({esc(settled.get("settled_by"))}){by}</div>')
    if tool["status"] != "outcome_unknown":
        return ""
    forms = "".join(_action_form(action, f"call/{tool['tool_call_id']}", {}, tool["tool_call_id"])
                    for action in _SETTLING)
    return f'<div class="warning">The outcome is unknown: settle it.</div><div class="operator settle">{forms}</div>'


def _open_call(call: Json, actions: Sequence[OperatorAction]) -> str:
    """An open tool call of the running turn, with the actions on it (cancel)."""
    forms = "".join(_action_form(action, f"call/{call['tool_call_id']}", {}, call["tool_call_id"]) for action in actions)
    return f"""<div class="open-call" data-tool-call-id="{esc(call['tool_call_id'])}"><div><strong>{esc(call['tool_name'])}</strong>
<span class="badge effect">{esc(call['effect'])}</span> <span class="badge {esc(call['status'])}">{esc(call['status'])}</span>
<span class="muted">{esc(call['tool_call_id'])}</span></div><pre class="arguments">{esc(call['arguments'])}</pre>
<div class="operator">{forms}</div></div>"""


def _message(message: Json) -> str:
    role = message["role"]
    if role == "tool":
        return f"""<details class="tool-output" open><summary><span class="role">output</span>
<strong>{esc(message['tool_name'])}</strong></summary><pre class="output">{esc(message['tool_output'])}</pre></details>"""
    if message["tool"] is not None and message["tool_name"]:
        return _tool_call(message)
    return f'<div class="message {esc(role)}"><span class="role">{esc(role)}</span><p>{esc(message["text"])}</p></div>'


def _transcript(detail: Json) -> str:
    parts: list[str] = []
    turn: str | None = None
    for message in detail["transcript"]:
        if message["turn_id"] != turn:
            turn = message["turn_id"]
            usage = detail["turn_usage"].get(turn)
            parts.append(f'<h3 class="turn">{esc(turn)}<span class="muted">'
                         f'{" · " + _usage(usage) if usage else ""}</span></h3>')
        parts.append(f'<div class="seq" data-sequence="{esc(message["sequence"])}">{_message(message)}</div>')
    if not detail["worker"]:
        parts.append('<p class="warning">No Worker serving this session answered: the transcript needs one '
                     '(start it with dex-agents worker).</p>')
    return "".join(parts) or '<p class="muted">No messages yet.</p>'


def session_fragment(detail: Json) -> str:
    """The session page's body: header, approvals, transcript with inline tool calls, actions."""
    state = detail["state"] or {}
    offered = [action for action in OPERATOR_ACTIONS if action.name in detail["actions"]
               and (action.while_set is None or state.get(action.while_set) is not None)]
    on_session = "".join(_action_form(action, "session", state) for action in offered if action.scope == "session")
    on_approvals = [action for action in offered if action.scope == "interrupt"]
    approvals = "".join([*(_approval(item, on_approvals, detail["session_id"]) for item in detail["pending_interrupts"]),
                         *(_approval(item, on_approvals, item["session_id"]) for item in detail["child_approvals"])])
    children = "".join(f'<li><a href="/sessions/{esc(child["session_id"])}">{esc(child["session_id"])}</a> '
                       f'<span class="muted">{esc(child["flow_type"])} · {esc(child["run_status"])}</span></li>'
                       for child in detail["children"])
    on_calls = [action for action in offered if action.scope == "tool_call"]
    calls = "".join(_open_call(call, on_calls) for call in detail["open_tool_calls"])
    return f"""<div class="session-head" data-cursor="{esc(detail['event_cursor'])}">
<h1>{esc(detail['session_id'])}</h1>
<div class="facts"><span>{esc(detail['flow_type'])}</span>
<span class="badge {esc(state.get('status', detail['run_status']))}" id="agent-status">{esc(state.get('status', '—'))}</span>
<span class="muted">Dex run: {esc(detail["run_status"])}</span><span>{esc(state.get('turn_count', 0))} turns</span>
<span>{esc(state.get('message_count', 0))} messages</span><span>{_usage(detail['usage'])}</span></div></div>
{'<section class="approvals"><h2>Pending approvals</h2>' + approvals + '</section>' if approvals else ''}
{'<section class="open-calls"><h2>Open tool calls</h2>' + calls + '</section>' if calls else ''}
{'<section class="children"><h2>Sub-agent sessions</h2><ul>' + children + '</ul></section>' if children else ''}
<section class="transcript"><h2>Transcript</h2>{_transcript(detail)}</section>
<section class="actions"><h2>Actions</h2><form id="send-form"><input id="send-text" placeholder="message to the agent"
 aria-label="message" data-keep="session/send"><button>Send</button></form><div class="operator">{on_session}</div></section>"""
