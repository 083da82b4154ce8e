"""The lazy-export recipe of a public package (``dex_agents``, ``dex_agents.testing``): its public names
are a table of name -> defining module, and a name's module is imported on the name's first use (PEP
562), so importing the package imports nothing heavy (neither Dex nor gRPC nor the engine).

Usage, in the package's ``__init__``::

    _EXPORTS = {"SessionTiming": "dex_agents.shell.timing", ...}
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
    __all__ = sorted(_EXPORTS)

(with the same names imported under ``TYPE_CHECKING``, so type checkers see them).

Invariants: a loaded name is cached in the package's namespace (the next use is a plain lookup); an
unknown name raises ``AttributeError``; ``dir(package)`` lists every public name, loaded or not.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: MutableMapping[str, object]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``, whose public names are ``exports``
    (name -> defining module) and whose globals are ``namespace``."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value: object = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
