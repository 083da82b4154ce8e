"""What the console tests share: the app on a real engine and Worker, driven over httpx's ASGI transport."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx
from dex import FileCredential
from starlette.applications import Starlette

from dex_agents.console import ConsoleSettings, create_app
from dex_agents.console.app import close_app

T = TypeVar("T")


def run_with_app(server_address: str, body: Callable[[httpx.AsyncClient, Starlette], Awaitable[T]], *,
                 credential: FileCredential | None = None, headers: dict[str, str] | None = None) -> T:
    """Run ``body`` with an httpx client of a fresh console app (on its own event loop), then close the app."""

    async def main() -> T:
        app = create_app(ConsoleSettings(server_address=server_address, credential=credential))
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://console", headers=headers) as http:
                return await body(http, app)
        finally:
            await close_app(app)

    return asyncio.run(main())


def parse_sse(text: str) -> list[tuple[str | None, str]]:
    """(id, data) of each SSE message in ``text`` (comments skipped)."""
    messages: list[tuple[str | None, str]] = []
    for block in text.split("\n\n"):
        event_id, data = None, None
        for line in block.splitlines():
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("data: "):
                data = line[6:]
        if data is not None:
            messages.append((event_id, data))
    return messages
