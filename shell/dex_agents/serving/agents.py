"""``load_agents``: the session Flows named by ``module:attribute`` references, for Workers.

A reference names an ``AgentSessionFlow``, a sequence of them, or a callable taking no arguments
that returns either (called once, in the Worker process). Loading imports the module the way
``python -m`` would find it: ``app_dir`` (the working directory by default) comes first on
``sys.path``, since a console script's own ``sys.path`` does not hold it.

Invariants: every failure is an ``AgentReferenceError`` naming the reference and what was wrong,
with the original exception as its cause; ``missing_module`` names a module that could not be
imported (for an install hint). Nothing is served or started here.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from dex_agents.shell.flow import AgentSessionFlow

__all__ = ["AgentReferenceError", "load_agents"]


class AgentReferenceError(ValueError):
    """A ``module:attribute`` reference that does not name agent Flows.

    Attributes:
        missing_module: The module whose import failed with ``ModuleNotFoundError``, if that was it.
    """

    def __init__(self, message: str, *, missing_module: str | None = None) -> None:
        super().__init__(message)
        self.missing_module = missing_module


def _flows_of(value: object) -> tuple[AgentSessionFlow, ...] | None:
    if isinstance(value, AgentSessionFlow):
        return (value,)
    if isinstance(value, Sequence) and not isinstance(value, str) and value \
            and all(isinstance(item, AgentSessionFlow) for item in value):
        return tuple(value)
    return None


def load_agents(reference: str, *, app_dir: Path | None = None) -> tuple[AgentSessionFlow, ...]:
    """The Flows named by ``reference`` (``module:attribute``; see the module docstring).

    Raises:
        AgentReferenceError: a malformed reference, a module that cannot be imported, a missing
            attribute, a callable that raised, or a value that is not agent Flows.
    """
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise AgentReferenceError(f"bad agent reference {reference!r}: expected module:attribute, "
                                  f"e.g. my_app.agents:build_flow")
    directory = str((app_dir or Path.cwd()).resolve())
    if directory not in sys.path:
        sys.path.insert(0, directory)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise AgentReferenceError(f"cannot import {module_name!r}: {error}", missing_module=error.name) from error
    except Exception as error:  # noqa: BLE001 - any import failure of the user's module is reported
        raise AgentReferenceError(f"importing {module_name!r} failed: {type(error).__name__}: {error}") from error
    try:
        value = getattr(module, attribute)
    except AttributeError:
        raise AgentReferenceError(f"{module_name!r} has no attribute {attribute!r}") from None
    if _flows_of(value) is None and callable(value):
        try:
            value = value()
        except ModuleNotFoundError as error:
            raise AgentReferenceError(f"{reference} cannot import {error.name!r}: {error}",
                                      missing_module=error.name) from error
        except Exception as error:  # noqa: BLE001 - the agent's own failure, reported with its type
            raise AgentReferenceError(f"{reference} raised {type(error).__name__}: {error}") from error
    flows = _flows_of(value)
    if flows is None:
        raise AgentReferenceError(f"{reference!r} is a {type(value).__name__}, not an AgentSessionFlow: name a Flow "
                                  f"from create_agent_session_flow, a list of them, or a function returning either")
    return flows
