"""The one lazy-export recipe of ``dex_agents`` and ``dex_agents.testing``: names load on first use,
are then cached, unknown names raise, and ``dir`` lists every public name before it loads."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import pytest

import dex_agents
import dex_agents.testing
from dex_agents._lazy_exports import lazy_exports


@pytest.mark.parametrize(("package", "name"), [(dex_agents, "SessionTiming"), (dex_agents.testing, "poll_until")],
                         ids=lambda p: getattr(p, "__name__", p))
def test_every_public_name_is_listed_and_one_loads(package: ModuleType, name: str) -> None:
    assert set(package.__all__) <= set(dir(package))
    assert getattr(package, name).__name__ == name
    with pytest.raises(AttributeError, match=f"module '{package.__name__}' has no attribute 'Nope'"):
        package.Nope  # noqa: B018


def test_a_loaded_name_is_cached_in_the_package() -> None:
    namespace: dict[str, object] = {}
    getattr_, dir_ = lazy_exports("pkg", {"dumps": "json"}, namespace)
    assert dir_() == ["dumps"] and namespace == {}
    dumps = getattr_("dumps")
    assert namespace == {"dumps": dumps}


def test_importing_the_packages_imports_neither_dex_nor_the_engine() -> None:
    code = ("import sys, dex_agents, dex_agents.testing; "
            "print(sorted(m for m in ('dex', 'grpc', 'dex_agents.engine', 'dex_agents.shell') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
