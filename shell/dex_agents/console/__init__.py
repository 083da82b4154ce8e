"""The session console: an HTTP API and a web UI for watching and operating agent sessions.

One ASGI app (``create_app``) over ``dex_agents.client.AsyncSessionClient``: a JSON API with stable
error codes (``errors``), Server-Sent Events resumable by event cursor (``events``), server-rendered
pages with one ES module (``pages``, ``render``, ``static/``), bearer-token auth (``auth``), and the
operator actions as data (``actions``). ``dex-agents console`` serves it (``server``).
"""

from dex_agents.console.app import create_app as create_app
from dex_agents.console.backend import ConsoleSettings as ConsoleSettings

__all__ = ["ConsoleSettings", "create_app"]
