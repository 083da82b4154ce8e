"""``error_chain``: an exception and the ones behind it, the one walk every reader of a failure uses
(the adapters' error classification, the retry-after reader, the Worker's credential check, the CLI).

Invariant: each exception is yielded once, ``error`` first, then what it was raised from
(``__cause__``) or, when there is none, what it was raised while handling (``__context__``); a cycle ends
the walk.
"""

from __future__ import annotations

from collections.abc import Iterator


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the exceptions behind it (see the module docstring)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


__all__ = ["error_chain"]
