"""The adapter conformance suite: framework-independent scenarios every adapter must pass.

An adapter author implements ``ConformanceAdapter`` (a test model that follows a ``ScriptedModel``,
the suite's tools, structured output) and subclasses ``AdapterConformanceSuite`` (see ``suite``).
Each scenario asserts what the next model call receives, what is stored, the Step history and the
events; the crash scenarios SIGKILL a Worker child at every Step boundary and inside each tool
effect class.
"""

from dex_agents.testing.conformance.adapter import ConformanceAdapter, ConformanceSetup
from dex_agents.testing.conformance.fixtures import Conformance, adapter_fixture, assert_tool_results_follow_calls
from dex_agents.testing.conformance.model import (
    ModelReply,
    ScriptedFailure,
    ScriptedModel,
    SeenCall,
    SeenMessage,
)
from dex_agents.testing.conformance.suite import AdapterConformanceSuite
from dex_agents.testing.conformance.tools import ConformanceTool

__all__ = [
    "AdapterConformanceSuite",
    "Conformance",
    "ConformanceAdapter",
    "ConformanceSetup",
    "ConformanceTool",
    "ModelReply",
    "ScriptedFailure",
    "ScriptedModel",
    "SeenCall",
    "SeenMessage",
    "adapter_fixture",
    "assert_tool_results_follow_calls",
]
