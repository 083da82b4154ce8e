"""Arguments checked by the framework's own schema of the tool, before an edited approval runs them.

A binding's ``arguments_validator(tool_name)`` answers the framework's validator of the tool's
arguments (``ArgumentsValidator``: it takes the arguments' JSON text and raises ``ValueError`` with the
framework's message when they do not validate), or ``None`` when the agent has no such tool. The turn
template's ``validate_tool_arguments`` (the session runner's hook, asked by ``AwaitToolApproval`` for an
edit) answers ``arguments_problem``: ``None`` when they validate, else the text the approver reads.

``json_schema_validator`` is the validator of a framework that gives a tool only its JSON Schema (the
OpenAI Agents SDK's ``params_json_schema``, a LangChain tool's dict ``args_schema``): ``jsonschema``,
Draft 2020-12, every error with its JSON path. ``checked_arguments`` is a tool run's own check: the
validator's value, or the ``invalid_arguments_error`` the model reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TypeAlias, TypeVar

from dex_agents.adapters.kit.tool_errors import invalid_arguments_error

T = TypeVar("T")

ArgumentsValidator: TypeAlias = Callable[[str], object]
"""The framework's check of a tool's arguments: their JSON text in, the validated value out; raises
``ValueError`` (pydantic's ``ValidationError`` is one) saying why they do not validate."""


def json_schema_validator(schema: Mapping[str, object]) -> ArgumentsValidator:
    """The validator of JSON text against ``schema`` (a JSON object's schema): every error, with its
    path, in one ``ValueError``; text that is not JSON is the ``json`` module's ``ValueError``."""
    from jsonschema import Draft202012Validator  # only the frameworks that give a bare schema need it

    checker = Draft202012Validator(schema)

    def validate(arguments: str) -> object:
        value: object = json.loads(arguments)
        errors = sorted(checker.iter_errors(value), key=lambda error: (error.json_path, error.message))
        if errors:
            raise ValueError("; ".join(f"{error.json_path}: {error.message}" for error in errors))
        return value

    return validate


def arguments_problem(tool_name: str, validator: ArgumentsValidator | None, arguments: str) -> str | None:
    """Why ``arguments`` cannot run ``tool_name`` (``None``: they validate): the agent has no such tool,
    or the framework's validation error (``invalid_arguments_error``'s text)."""
    if validator is None:
        return f"the agent has no tool {tool_name!r}"
    try:
        validator(arguments or "{}")
    except ValueError as error:
        return str(invalid_arguments_error(tool_name, str(error)))
    return None


def checked_arguments(tool_name: str, validator: Callable[[str], T], arguments: str) -> T:
    """``validator``'s value of ``arguments`` (``"{}"`` when empty), or the ``invalid_arguments_error``
    the model reads when they do not validate."""
    try:
        return validator(arguments or "{}")
    except ValueError as error:
        raise invalid_arguments_error(tool_name, str(error)) from error


__all__ = ["ArgumentsValidator", "arguments_problem", "checked_arguments", "json_schema_validator"]
