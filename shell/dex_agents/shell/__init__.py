"""The imperative shell: the agent session Flow on Dex.

``create_agent_session_flow(runner, flow_type, ...)`` returns an ``AgentSessionFlow`` whose Steps and
RPCs gather committed values, call the pure reducers (``dex_agents.pure``), and perform what they
answer against Dex; the core's requests (a model call, a user message, a tool run) are performed in
``requests``, the one module that calls the runner. The runner contract is ``runner``.
``session_registry`` and ``session_worker`` build the Registry (with the session codecs) and the
``AsyncWorker`` the Flow runs on.
"""

from dex_agents.shell.codecs import StoredValueError as StoredValueError
from dex_agents.shell.codecs import session_codec_registry as session_codec_registry
from dex_agents.shell.flow import DEFAULT_EVENT_STREAM_CAPACITY_BYTES as DEFAULT_EVENT_STREAM_CAPACITY_BYTES
from dex_agents.shell.flow import AgentSessionFlow as AgentSessionFlow
from dex_agents.shell.flow import create_agent_session_flow as create_agent_session_flow
from dex_agents.shell.flow import session_flow_definition as session_flow_definition
from dex_agents.shell.runner import AgentEventWriter as AgentEventWriter
from dex_agents.shell.runner import AgentFrameworkRunner as AgentFrameworkRunner
from dex_agents.shell.runner import AgentTurnContext as AgentTurnContext
from dex_agents.shell.runner import DeferredToolExecution as DeferredToolExecution
from dex_agents.shell.runner import NonRetryableModelError as NonRetryableModelError
from dex_agents.shell.runner import ToolExecutionError as ToolExecutionError
from dex_agents.shell.runner import ToolExecutionResult as ToolExecutionResult
from dex_agents.shell.timing import SessionTiming as SessionTiming
from dex_agents.shell.perform import DEADLINE_CONDITION_ID as DEADLINE_CONDITION_ID
from dex_agents.shell.worker import session_registry as session_registry
from dex_agents.shell.worker import session_worker as session_worker

__all__ = [
    "DEADLINE_CONDITION_ID",
    "DEFAULT_EVENT_STREAM_CAPACITY_BYTES",
    "AgentEventWriter",
    "AgentFrameworkRunner",
    "AgentSessionFlow",
    "AgentTurnContext",
    "DeferredToolExecution",
    "NonRetryableModelError",
    "SessionTiming",
    "StoredValueError",
    "ToolExecutionError",
    "ToolExecutionResult",
    "create_agent_session_flow",
    "session_codec_registry",
    "session_flow_definition",
    "session_registry",
    "session_worker",
]
