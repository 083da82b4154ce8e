"""Answering a pending approval: ``POST /api/sessions/{id}/interrupts/{interrupt_id}``.

Invariants: the body is checked before anything is sent (``resolution_of``: ``edited_arguments`` only
with an approval, and a JSON object's text); an edited approval's answer waits for the session's check
of the edit by the tool's own schema (the events ``interrupt_resolved`` or
``dex_agents.approval_refused``), so a refused edit is a 422 with the schema's reason.
"""

from __future__ import annotations

import json
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dex_agents.console.errors import ApiError
from dex_agents.console.handlers import backend_of, json_body, json_route, optional_text

__all__ = ["EDIT_CHECK_SECONDS", "post_interrupt", "resolution_of"]

EDIT_CHECK_SECONDS: Final = 10.0
"""How long an edited approval's answer waits for the session's check of the edit."""
RESOLUTION_TEXTS: Final = ("rejection_message", "edited_arguments", "arguments_sha256", "approver", "reason")
"""The optional text fields of an approval's answer (``resolve_interrupt``'s)."""


def resolution_of(body: dict[str, Any]) -> tuple[bool, dict[str, str | None]]:
    """``approved`` and the optional fields of an approval's answer, checked (400 before anything is
    sent): ``edited_arguments`` only with an approval, and the text of a JSON object."""
    if unknown := sorted(set(body) - {"approved", *RESOLUTION_TEXTS}):
        raise ApiError("bad_request", f"unknown field(s) {unknown}; an answer takes approved and "
                                      f"{', '.join(RESOLUTION_TEXTS)}")
    approved = body.get("approved")
    if not isinstance(approved, bool):
        raise ApiError("bad_request", "approved (true or false) is required")
    texts = {name: optional_text(body, name) for name in RESOLUTION_TEXTS}
    edited = texts["edited_arguments"]
    if edited is not None:
        if not approved:
            raise ApiError("bad_request", "edited_arguments go with an approval (approved: true)")
        try:
            parsed = json.loads(edited)
        except ValueError as error:
            raise ApiError("bad_request", f"edited_arguments is not JSON: {error}") from None
        if not isinstance(parsed, dict):
            raise ApiError("bad_request", "edited_arguments must be a JSON object")
    return approved, texts


@json_route
async def post_interrupt(request: Request) -> Response:
    """Approve or reject; an edited approval answers once the session checked the edit against the
    tool's schema (422 ``refused`` with its reason when it did not take it; 202 with ``checked:
    false`` when the check took longer than ``EDIT_CHECK_SECONDS``)."""
    session_id, interrupt_id = request.path_params["session_id"], request.path_params["interrupt_id"]
    approved, texts = resolution_of(await json_body(request))
    backend = backend_of(request)
    client = await backend.client_of(session_id)
    await client.check_worker(session_id)
    edited = texts["edited_arguments"] is not None
    after = await backend.latest_cursor(client, session_id) if edited else ""
    if not await client.resolve_interrupt(session_id, interrupt_id, approved, texts["rejection_message"],
                                          edited_arguments=texts["edited_arguments"],
                                          arguments_sha256=texts["arguments_sha256"], approver=texts["approver"],
                                          reason=texts["reason"]):
        raise ApiError("interrupt_not_pending", f"interrupt {interrupt_id!r} is not pending (answered, "
                                                f"expired or unknown)")
    answer = {"resolved": True, "approved": approved, "edited": edited}
    if not edited:
        return JSONResponse(answer)
    checked = await backend.edit_check(client, session_id, interrupt_id, after, EDIT_CHECK_SECONDS)
    if checked is None:
        return JSONResponse({**answer, "checked": False}, status_code=202)
    taken, why = checked
    if not taken:
        raise ApiError("refused", f"the session refused the edited arguments (the approval is pending again): {why}")
    return JSONResponse({**answer, "checked": True})
