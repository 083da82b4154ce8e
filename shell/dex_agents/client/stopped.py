"""A stopped session, as the session clients report it.

A session is *stopped* when its Dex run is closed: ``stop`` (``Client.stop_flow``: canceled, or
terminated or failed by an operator), or the run failed. Its committed values stay readable (and the
query-only RPCs ``get_agent_snapshot`` and ``list_agent_messages`` still answer while a Worker serves
the Flow type), but ``AgentState.status`` keeps the value it had when the run closed
(``waiting_for_user_message``, say): whether a session is stopped is Dex's Flow status
(``describe_flow``), never a field of the spec's snapshot.
"""

from __future__ import annotations

from typing import Final

import grpc
from dex import DexServiceError, ErrorSubStatus, FlowNotActiveOrNotFoundError, FlowStatus

from dex_agents.client.errors import SessionClientError

OPEN_STATUSES: Final = frozenset({FlowStatus.RUNNING, FlowStatus.CONTINUED_AS_NEW})
"""Flow statuses of a session that is not stopped (a run that continued as new goes on in the next)."""


def is_stopped_status(status: FlowStatus) -> bool:
    """Whether a session whose run has ``status`` is stopped."""
    return status not in OPEN_STATUSES


def stopped_label(status: FlowStatus) -> str:
    """How the command line and the console show a run status: ``stopped (canceled)`` for a closed
    run, the status itself (``running``) otherwise."""
    name = status.value
    return f"stopped ({name})" if is_stopped_status(status) else name


class SessionStoppedError(SessionClientError, FlowNotActiveOrNotFoundError):
    """The session is stopped (its Dex run is closed), so it takes no message, approval or other
    write; raised at once instead of waiting. A ``FlowNotActiveOrNotFoundError``, as Dex reports it.

    Attributes:
        session_id: The session.
        status: Its run's Flow status (``canceled``, ``terminated``, ``failed``, ``completed``).
    """

    def __init__(self, session_id: str, status: FlowStatus, cause: DexServiceError | None = None, *,
                 operation: str = "") -> None:
        """``cause``: Dex's refusal; ``None`` when the client refused before asking (``operation``)."""
        super().__init__(grpc.StatusCode.FAILED_PRECONDITION if cause is None else cause.code,
                         ErrorSubStatus.UNCATEGORIZED if cause is None else cause.sub_status,
                         f"session {session_id} is stopped (its run is {status.value}); it takes no more input",
                         operation if cause is None else cause.operation, session_id)
        self.session_id = session_id
        self.status = status


__all__ = ["OPEN_STATUSES", "SessionStoppedError", "is_stopped_status", "stopped_label"]
