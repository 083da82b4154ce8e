"""The vocabulary of the flow table (``flow.table``): what one Step row and one RPC row say.

A row is data only: a Step's input kind, options, wait, per-method locks and loads, moves and failure
route; an RPC's input and output types, locks, loads and whether it writes. Names are the persisted
names' enums; durations are whole seconds (Dex rejects anything else).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, TypeAlias, final

from dex_agents.pure.values.persistence import AttributeName, ChannelMapName, ChannelName, MapName, RpcName, StepType


DEX_DEFAULT_METHOD_TIMEOUT_SECONDS: Final = 2 * 60 * 60
"""Dex's method timeout of a Step whose options set none (a row's ``None``)."""


@final
class StepInputKind(StrEnum):
    """What a Step receives as its input."""

    NONE = "none"
    TOOL_CALL_ID = "tool_call_id"
    RESULT_COUNT = "result_count"
    START_INPUT = "start_input"
    COMPACTION_TRIGGER = "compaction_trigger"


@final
class Durability(StrEnum):
    """Dex Step durability of one method. The session always sets ``SYNC`` explicitly."""

    SYNC = "SYNC"
    ASYNC = "ASYNC"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RetrySpec:
    """A Dex ``RetryPolicy``; ``None`` fields use the server default. Durations are whole seconds."""

    maximum_attempts: int | None = None
    total_duration_seconds: int | None = None
    maximum_interval_seconds: int | None = None
    initial_interval_seconds: int | None = None


def _whole_seconds(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if value != int(value) or value < minimum:
        raise ValueError(f"{name} must be a whole number of seconds >= {minimum} (Dex takes whole seconds), got {value}")
    return int(value)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How a session retries its model calls (``model_retry=`` of every session factory): the Dex
    retry options of ``RunModel`` and ``CompactHistory``, replacing their flow table row's.

    Attributes:
        max_attempts: Attempts of one model call, the first included (>= 1); the last failed one
            fails the turn (``RecordTurnFailure``).
        initial_backoff: Seconds before the first retry (whole, >= 1); each later wait doubles (Dex's
            backoff coefficient 2.0) up to ``max_backoff``. A model error with a retry-after
            (``ModelRetryAfterError``, ``retry_after_seconds``) replaces the wait before its retry.
        max_backoff: The longest wait between two attempts, in seconds (whole, >= ``initial_backoff``).
        total_duration: Seconds from the first attempt after which no retry starts (whole, >= 1);
            default 30 minutes, as the row's.
    """

    max_attempts: int = 3
    initial_backoff: float = 1
    max_backoff: float = 100
    total_duration: float = 30 * 60

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise TypeError(f"max_attempts must be an int, got {type(self.max_attempts).__name__}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        initial = _whole_seconds("initial_backoff", self.initial_backoff, 1)
        if _whole_seconds("max_backoff", self.max_backoff, 1) < initial:
            raise ValueError(f"max_backoff ({self.max_backoff}) must be >= initial_backoff ({self.initial_backoff})")
        _whole_seconds("total_duration", self.total_duration, 1)

    def spec(self) -> RetrySpec:
        """The Dex retry options this policy sets."""
        return RetrySpec(maximum_attempts=self.max_attempts, total_duration_seconds=int(self.total_duration),
                         maximum_interval_seconds=int(self.max_backoff),
                         initial_interval_seconds=int(self.initial_backoff))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class MapInstanceRef:
    """One instance of an AttributeMap (to load it)."""

    name: MapName
    key: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class MethodAccess:
    """What one Step method (or an RPC) locks and loads, beyond the singleton Attributes and Channel
    sizes every invocation receives.

    Attributes:
        locks: Attributes locked for the invocation.
        maps: AttributeMaps loaded whole.
        call_instances: AttributeMaps of which only the instance keyed by the Step's tool call ID loads.
        message_instances: AttributeMaps of which only the instance keyed by the RPC input's key loads
            (``send_user_message_once``'s message ID, ``resolve_tool_outcome``'s tool call ID); the
            caller locks and loads it when it invokes the RPC (``RPCInvokeOptions``), since
            an ``@rpc`` fixes its locks and loads when the class is defined.
        cached_maps: Maps of ``maps`` whose instances are written once (``AgentMessages``: messages are
            only appended), so a Worker may keep the committed ones between invocations. The method
            still sees the whole map; what Dex sends is the shell's choice: a Step movement loads only
            the instances the moving Worker's cache lacks (its static options load the whole map), an
            RPC loads none, and the shell reads what its cache lacks from Dex's committed state.
    """

    locks: tuple[AttributeName, ...] = ()
    maps: tuple[MapName, ...] = ()
    call_instances: tuple[MapName, ...] = ()
    message_instances: tuple[MapName, ...] = ()
    cached_maps: tuple[MapName, ...] = ()

    def __post_init__(self) -> None:
        if not set(self.cached_maps) <= set(self.maps):
            raise ValueError(f"cached maps {self.cached_maps} must be among the maps loaded {self.maps}")

    def instances(self, key: str | None) -> tuple[MapInstanceRef, ...]:
        """The instances this method loads for ``key`` (a Step's tool call ID, an RPC input's message
        ID; none without a key)."""
        if key is None:
            return ()
        return tuple(MapInstanceRef(name=name, key=key) for name in (*self.call_instances, *self.message_instances))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class NoWait:
    """The Step has no ``wait_for``: ``execute`` runs at once."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ForOneMessage:
    """Wait for one message on ``channel`` (consumed by ``execute``)."""

    channel: ChannelName


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ForInputCountMessages:
    """Wait for as many messages on ``channel`` as the Step's input (a result count) says."""

    channel: ChannelName


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ForResolutionOrDeadline:
    """Wait for one message on the call's interrupt instance of ``channel_map`` or the interrupt's
    deadline Timer, whichever comes first (the core decides the instance and Timer: ``ApprovalWait``)."""

    channel_map: ChannelMapName


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ForChildSession:
    """Wait for the call's child session, a Dex SubFlow this wait starts (or finds again), to close
    (ours; the core decides the child's Flow type and start input: ``SubAgentWait``)."""


StepWait: TypeAlias = NoWait | ForOneMessage | ForInputCountMessages | ForResolutionOrDeadline | ForChildSession
"""What a Step's ``wait_for`` waits on."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StepRow:
    """One Step type: its input, options, wait, per-method locks and loads, moves and failure route.

    Attributes:
        next_steps: The Steps a transition of this Step may move to (empty: it only dead-ends).
        failure_route: Where Dex moves when ``execute`` runs out of attempts (with this Step's input).
    """

    step_type: StepType
    input: StepInputKind
    execute_method_timeout_seconds: int | None = None
    heartbeat_timeout_seconds: int | None = None
    execute_retry: RetrySpec | None = None
    durability: Durability = Durability.SYNC
    wait: StepWait = NoWait()
    wait_for: MethodAccess = MethodAccess()
    execute: MethodAccess = MethodAccess()
    next_steps: frozenset[StepType] = frozenset()
    failure_route: StepType | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RpcRow:
    """One RPC: its input and output types, what it locks and loads, and whether it writes.

    Attributes:
        input_type: The input record, or ``None`` when the RPC takes none.
        output_type: ``bool`` or the output record.
        writes: Whether a call may write (publish or set); a reader only answers.
    """

    rpc: RpcName
    input_type: type[object] | None
    output_type: type[object]
    access: MethodAccess = MethodAccess()
    writes: bool


__all__ = [
    "DEX_DEFAULT_METHOD_TIMEOUT_SECONDS",
    "Durability",
    "ForChildSession",
    "ForInputCountMessages",
    "ForOneMessage",
    "ForResolutionOrDeadline",
    "MapInstanceRef",
    "MethodAccess",
    "NoWait",
    "RetryPolicy",
    "RetrySpec",
    "RpcRow",
    "StepInputKind",
    "StepRow",
    "StepWait",
]
