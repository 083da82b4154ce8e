"""``HistoryMemo``: a framework's parsed history items by their stored text, so a long session's model
calls do not parse (and validate) the same history again and again.

A stored ``framework_item`` never changes once committed, and the Worker's message cache hands out the
same text objects turn after turn, so an item's parse is looked up by its text in O(1) (with the
display field it refers to, for an item that stores a long text once: ``kit.messages``). Frameworks may
mutate the messages of a history they are given (Pydantic AI fills in a request's run metadata), so
every lookup returns fresh copies made by the adapter's ``copy`` (cheap next to parsing).

Invariants:
    * ``load`` returns what ``parse`` returns for each item, in order, as copies.
    * The memo holds at most ``max_characters`` characters of item text; it is cleared when a new item
      would exceed that (the next calls parse again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Final, Generic, TypeVar, final

from dex_agents.adapters.kit.messages import item_data, refers
from dex_agents.pure.values.session import AgentMessage

T = TypeVar("T")

DEFAULT_MEMO_CHARACTERS: Final = 64 * 1024 * 1024
"""The memo's bound, in characters of stored item text."""


@final
class HistoryMemo(Generic[T]):
    """Parsed framework items by their stored text (see the module docstring)."""

    def __init__(self, parse: Callable[[str | object], Sequence[T]], copy: Callable[[T], T], *,
                 max_characters: int = DEFAULT_MEMO_CHARACTERS) -> None:
        self._parse = parse
        self._copy = copy
        self._max_characters = max_characters
        self._parsed: dict[object, tuple[T, ...]] = {}
        self._characters = 0
        self._lock = threading.Lock()

    def load(self, stored: Iterable[AgentMessage]) -> list[T]:
        """The parsed items of every stored message's ``framework_item`` (``kit.item_data``: a referred
        display field put back), in order, as fresh copies."""
        copy = self._copy
        loaded: list[T] = []
        for message in stored:
            item = message.framework_item
            key: object = (item, message.text, message.tool_output) if refers(message) else item
            parsed = self._parsed.get(key)
            if parsed is None:
                parsed = tuple(self._parse(item_data(message)))
                size = len(item) + len(message.text or "") + len(message.tool_output or "")
                self._remember(key, size, parsed)
            loaded.extend(copy(value) for value in parsed)
        return loaded

    def _remember(self, key: object, size: int, parsed: tuple[T, ...]) -> None:
        if size > self._max_characters:
            return
        with self._lock:
            if self._characters + size > self._max_characters:
                self._parsed.clear()
                self._characters = 0
            if key not in self._parsed:
                self._parsed[key] = parsed
                self._characters += size


__all__ = ["DEFAULT_MEMO_CHARACTERS", "HistoryMemo"]
