"""Fixtures of the adapters' over-HTTP session tests (``tests.adapters.over_http_support``).

``chat_server``: the model provider, ``OpenAICompatibleServer`` answering with
``over_http_support.respond`` (a test module whose sessions say more overrides it with its own
responder). Tests request it before ``agent_environment``, so it stops after the Worker.
``openai_client``: a real ``openai`` client of ``chat_server`` without SDK retries (one model
attempt is one HTTP request), closed after the Worker stopped.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai import AsyncOpenAI

from dex_agents.testing.openai_compatible import OpenAICompatibleServer
from tests.adapters.over_http_support import async_openai_client, respond


@pytest.fixture
def chat_server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer(respond) as server:
        yield server


@pytest.fixture
def openai_client(chat_server: OpenAICompatibleServer) -> Iterator[AsyncOpenAI]:
    with async_openai_client(chat_server) as client:
        yield client
