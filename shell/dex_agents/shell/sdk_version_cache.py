"""Memoizes the SDK's own version lookup on the pull Worker's stream-registration path.

SDK 1.23.0's pull Worker calls ``dex._server_protocol.sdk_version()`` for every
``PollWorkerTask`` stream it opens, and that call parses the installed package's metadata with
``importlib.metadata`` (about 1-6 ms of CPU each; a session Worker opens about one stream per turn).
The installed version cannot change while the process runs, so the answer is computed once.

Invariant: the version the Worker registers with is exactly what the SDK would have computed;
when the SDK's private name is missing (another SDK version), nothing is changed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final

import dex._pull_worker as _pull_worker

_PATCHED_NAME: Final = "sdk_version"


def memoize_sdk_version() -> bool:
    """Replace the pull Worker's ``sdk_version`` with a memoized one (idempotent); whether it is now memoized."""
    current: object = getattr(_pull_worker, _PATCHED_NAME, None)
    if current is None or not callable(current):
        return False
    if getattr(current, "cache_info", None) is not None:
        return True
    lookup: Callable[[], str] = current
    setattr(_pull_worker, _PATCHED_NAME, functools.cache(lookup))
    return True


__all__ = ["memoize_sdk_version"]
