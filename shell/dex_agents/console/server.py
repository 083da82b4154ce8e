"""Serving the console with uvicorn: in the foreground (``dex-agents console``) or beside a demo.

Invariants: ``--no-auth`` serves loopback only (``check_bind`` before anything is bound); the URL
printed is the one a browser opens; a ``BackgroundConsole`` is stopped (and its port freed) by ``stop``.
"""

from __future__ import annotations

import threading
import time
from typing import Final, final

import uvicorn

from dex_agents.console.app import create_app
from dex_agents.console.auth import check_bind
from dex_agents.console.backend import ConsoleSettings

__all__ = ["DEFAULT_PORT", "BackgroundConsole", "console_url", "serve_console"]

DEFAULT_PORT: Final = 8600


def console_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def _server(settings: ConsoleSettings, host: str, port: int) -> uvicorn.Server:
    check_bind(host, settings.credential)
    config = uvicorn.Config(create_app(settings), host=host, port=port, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=2)
    return uvicorn.Server(config)


def serve_console(settings: ConsoleSettings, host: str, port: int) -> None:
    """Serve until SIGINT or SIGTERM (raises ``ValueError`` for ``--no-auth`` beyond loopback)."""
    _server(settings, host, port).run()


@final
class BackgroundConsole:
    """The console served from a thread of this process (``dex-agents demo --console``, tests)."""

    def __init__(self, settings: ConsoleSettings, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _server(settings, host, port)
        self._thread = threading.Thread(target=self._server.run, name="dex-agents-console", daemon=True)
        self.host = host

    def start(self, timeout: float = 10.0) -> str:
        """Start serving (uvicorn installs no signal handlers off the main thread); returns the URL once
        the port is bound."""
        self._thread.start()
        pause, deadline = threading.Event(), time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the console did not start serving (is the port in use?)")
            pause.wait(0.02)
        return console_url(self.host, self.port)

    @property
    def port(self) -> int:
        return int(self._server.servers[0].sockets[0].getsockname()[1])

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10.0)
