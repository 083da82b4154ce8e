"""Smoke run of ``benchmarks.console`` at small sizes: it completes, prints its figures' labels, and
leaves nothing behind. The figures are never asserted (they depend on the machine)."""

from __future__ import annotations

import pytest

from benchmarks import console

pytestmark = pytest.mark.slow

LABELS = ("list API, 3 sessions in one answer: p50=", "list API with last activity, 3 sessions in one answer: p50=",
          "list API, first page of 50 of 3 sessions", "list page fragment (first 50 of 3)",
          "session API, 6 messages", "session page fragment, 6 messages",
          "streamed chunk to the page's event handler, 3 chunks: p50=")


def test_the_console_benchmark_runs_small(capsys: pytest.CaptureFixture[str]) -> None:
    console.main(["--sessions", "3", "--messages", "6", "--chunks", "3"])
    printed = capsys.readouterr().out
    for label in LABELS:
        assert label in printed, label
