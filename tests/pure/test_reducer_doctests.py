"""The examples in the session core's docstrings run and hold."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from dex_agents.pure.machine import usage, validation
from dex_agents.pure.machine.reducers import dispatch


@pytest.mark.parametrize("module", [dispatch, usage, validation], ids=lambda m: m.__name__)
def test_docstring_examples_hold(module: ModuleType) -> None:
    result = doctest.testmod(module, raise_on_error=False, verbose=False)
    assert result.attempted > 0 and result.failed == 0
