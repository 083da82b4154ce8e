"""Session clients for applications: typed access to an agent's sessions on any Dex server.

``SessionClient`` (sync) and ``AsyncSessionClient`` (asyncio) start sessions, send messages, approve
or reject tool calls, read snapshots, pages of messages and events from a cursor, and wait on
committed state. They need no runner: ``SessionClient.connect("127.0.0.1:8801", "SupportAgent")``
builds the Flow type's definition with ``session_flow_definition``, and a Worker serving the agent
(``dex-agents worker --agent module:attribute``) runs the session. What they raise is one rule for
every method (``dex_agents.client.errors``): ``ValueError``/``TypeError`` for a bad argument, else a
``SessionClientError`` (``SessionNotFoundError``, ``SessionStoppedError``, ``NoWorkerError``, ...).
"""

from dex_agents.client.async_session_client import AsyncSessionClient as AsyncSessionClient
from dex_agents.client.connection import SERVER_ADDRESS_ENV as SERVER_ADDRESS_ENV
from dex_agents.client.errors import NoWorkerError as NoWorkerError
from dex_agents.client.errors import RewindNotRecordedError as RewindNotRecordedError
from dex_agents.client.errors import SessionBusyError as SessionBusyError
from dex_agents.client.errors import SessionClientError as SessionClientError
from dex_agents.client.errors import SessionExistsError as SessionExistsError
from dex_agents.client.errors import SessionNotFoundError as SessionNotFoundError
from dex_agents.client.errors import SessionRefusedError as SessionRefusedError
from dex_agents.client.errors import SessionRewindError as SessionRewindError
from dex_agents.client.errors import SessionServerError as SessionServerError
from dex_agents.client.session_client import SessionClient as SessionClient
from dex_agents.client.stopped import SessionStoppedError as SessionStoppedError
from dex_agents.client.values import DEFAULT_WORKER_PROBE_SECONDS as DEFAULT_WORKER_PROBE_SECONDS
from dex_agents.client.values import EventPage as EventPage
from dex_agents.client.values import SessionEvent as SessionEvent
from dex_agents.client.values import SessionOverview as SessionOverview
from dex_agents.client.values import StateCondition as StateCondition
from dex_agents.client.values import status_is as status_is
from dex_agents.client.values import turn_ended as turn_ended
from dex_agents.client.values import turns_completed as turns_completed
from dex_agents.client.values import turns_ended as turns_ended
from dex_agents.shell.flow import session_flow_definition as session_flow_definition

__all__ = [
    "DEFAULT_WORKER_PROBE_SECONDS",
    "SERVER_ADDRESS_ENV",
    "AsyncSessionClient",
    "EventPage",
    "NoWorkerError",
    "RewindNotRecordedError",
    "SessionBusyError",
    "SessionClient",
    "SessionClientError",
    "SessionEvent",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionOverview",
    "SessionRefusedError",
    "SessionRewindError",
    "SessionServerError",
    "SessionStoppedError",
    "StateCondition",
    "session_flow_definition",
    "status_is",
    "turn_ended",
    "turns_completed",
    "turns_ended",
]
