"""Headless Chromium for the console's browser tests: Playwright driving Debian's ``chromium``
(Playwright's own browser download cannot work here), and the console served beside the test."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from dex import FileCredential
from playwright.sync_api import Browser, Page, sync_playwright

from dex_agents.console import ConsoleSettings
from dex_agents.console.server import BackgroundConsole

SCREENSHOTS_ENV: Final = "DEX_AGENTS_CONSOLE_SCREENSHOTS"
"""Set to a directory (``docs``) to write the screenshots there; otherwise they go to the test's tmp_path."""


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise RuntimeError("chromium is not installed: apt-get install -y chromium (./ci.sh does it)")
    return path


@contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def served_console(server_address: str, credential: FileCredential | None = None) -> Iterator[str]:
    console = BackgroundConsole(ConsoleSettings(server_address=server_address, credential=credential))
    url = console.start()
    try:
        yield url
    finally:
        console.stop()


@contextmanager
def laptop_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        yield context.new_page()
    finally:
        context.close()


def screenshot_path(tmp_path: Path, name: str) -> Path:
    directory = os.environ.get(SCREENSHOTS_ENV)
    return (Path(directory) if directory else tmp_path) / name
