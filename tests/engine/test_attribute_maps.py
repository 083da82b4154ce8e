"""AttributeMaps: writes need no load; reads need the whole map or the exact instance loaded
(``AttributeMapNotLoadedError`` otherwise), by static StepOptions, per-movement options, ``@rpc``
loads and ``RPCInvokeOptions``; instance keys, map size and instance deletes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import cast

from dex import (
    AttributeMap,
    AttributeMapNotLoadedError,
    AttributeMatch,
    Context,
    PersistenceSchema,
    RPCInvokeOptions,
    RPCResult,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    StepOptions,
    WaitForAttributeOptions,
    dead_end,
    go_to_many,
    rpc,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow, eventually

NOT_LOADED = "<not loaded>"
ABSENT = "<absent>"

scores = AttributeMap("Scores", int)
notes = AttributeMap("Notes", str)


@dataclass(frozen=True, slots=True, kw_only=True)
class MapView:
    keys: list[str]
    size: int
    values: dict[str, int]


def read_note(context: Context, key: str) -> str:
    try:
        value = cast(str | None, notes.get(context, key))
    except AttributeMapNotLoadedError:
        return NOT_LOADED
    return ABSENT if value is None else value


def read_score(context: Context, key: str) -> str:
    try:
        return str(scores.get(context, key))
    except AttributeMapNotLoadedError:
        return NOT_LOADED


def whole_map(context: Context) -> MapView:
    keys = sorted(scores.get_all_instance_keys(context))
    return MapView(keys=keys, size=scores.get_map_size(context), values={key: scores.get(context, key) for key in keys})


class Fill(Step[list[str]]):
    """Writes one score and note per key (no load needed), then fans out the readers."""

    def __init__(self, flow: MapFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: list[str]) -> StepDecision:
        for index, key in enumerate(input):
            scores.set(context, key, (index + 1) * 10)
            notes.set(context, key, f"note-{key}")
        self.flow.probe.record("own-write", read_score(context, input[0]))
        return go_to_many(
            StepMovement.of(ReadAll, "all"),
            StepMovement.of(ReadNone, "none"),
            StepMovement.of(ReadOne, "b"),
            StepMovement.of(ReadOne, "c", options=StepOptions(
                execute_load_attribute_map_instances=(notes.load("c"), scores.load("c")))),
        )


class ReadAll(Step[str]):
    def __init__(self, flow: MapFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_load_attribute_maps=(scores, notes))

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("all", whole_map(context))
        self.flow.probe.record("all-notes", [read_note(context, key) for key in ("a", "b", "c", "zz")])
        scores.delete(context, "a")
        return dead_end()


class ReadNone(Step[str]):
    def __init__(self, flow: MapFlow) -> None:
        self.flow = flow

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("none", [read_score(context, "a"), read_note(context, "a")])
        try:
            scores.get_all_instance_keys(context)
            self.flow.probe.record("none-keys", "loaded?")
        except AttributeMapNotLoadedError:
            self.flow.probe.record("none-keys", NOT_LOADED)
        return dead_end()


class ReadOne(Step[str]):
    """Static options load only instance ``b``; a movement may replace them entirely."""

    def __init__(self, flow: MapFlow) -> None:
        self.flow = flow

    def get_step_options(self) -> StepOptions:
        return StepOptions(execute_load_attribute_map_instances=(notes.load("b"),))

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record(f"one-{input}", [read_note(context, key) for key in ("a", "b", "c")]
                               + [read_score(context, input)])
        return dead_end()


class MapFlow(NamedFlow[list[str]]):
    def get_steps(self) -> StepList[list[str]]:
        return StepList.start_step(Fill(self)).other_steps(ReadAll(self), ReadNone(self), ReadOne(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(scores, notes)

    @rpc(load_attribute_maps=(scores,))
    def view(self, context: Context) -> RPCResult[MapView]:
        return RPCResult(whole_map(context))

    @rpc
    def note(self, context: Context, input: str) -> RPCResult[str]:
        return RPCResult(read_note(context, input))

    @rpc(load_attribute_map_instances=(notes.load("a"),))
    def note_a(self, context: Context) -> RPCResult[list[str]]:
        return RPCResult([read_note(context, "a"), read_note(context, "b")])

    @rpc
    def put(self, context: Context, input: str) -> RPCResult[bool]:
        notes.set(context, input, f"rpc-{input}")
        return RPCResult(True)


def test_step_loads_whole_maps_instances_and_per_movement_options(dex: DexFixture) -> None:
    flow = MapFlow(dex.flow_type())
    harness = dex.start(flow)
    harness.client.start_flow(flow, dex.flow_id(), ["a", "b", "c"])
    assert flow.probe.wait("own-write") == [NOT_LOADED], "a write does not load the instance"
    assert flow.probe.wait("all") == [MapView(keys=["a", "b", "c"], size=3, values={"a": 10, "b": 20, "c": 30})]
    assert flow.probe.wait("all-notes") == [["note-a", "note-b", "note-c", ABSENT]]
    assert flow.probe.wait("none") == [[NOT_LOADED, NOT_LOADED]]
    assert flow.probe.wait("none-keys") == [NOT_LOADED]
    assert flow.probe.wait("one-b") == [[NOT_LOADED, "note-b", NOT_LOADED, NOT_LOADED]]
    assert flow.probe.wait("one-c") == [[NOT_LOADED, NOT_LOADED, "note-c", "30"]], (
        "per-movement options replace the Step's static options")


def test_rpc_loads_by_decorator_and_by_invoke_options(dex: DexFixture) -> None:
    flow = MapFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, ["a", "b", "c"])
    flow.probe.wait("all")
    view = eventually(lambda: (v := harness.client.invoke_rpc(flow.view, flow_id)).keys == ["b", "c"] and v,
                      what="ReadAll's delete of instance a to commit")
    assert view == MapView(keys=["b", "c"], size=2, values={"b": 20, "c": 30})
    assert harness.client.invoke_rpc(flow.note, flow_id, "b") == NOT_LOADED
    assert harness.client.invoke_rpc(flow.note, flow_id, "b", options=RPCInvokeOptions(
        load_attribute_map_instances=(notes.load("b"),))) == "note-b"
    assert harness.client.invoke_rpc(flow.note, flow_id, "q", options=RPCInvokeOptions(
        load_attribute_map_instances=(notes.load("q"),))) == ABSENT
    assert harness.client.invoke_rpc(flow.note_a, flow_id) == ["note-a", NOT_LOADED]
    assert harness.client.invoke_rpc(flow.put, flow_id, "new key") is True
    assert harness.client.invoke_rpc(flow.note, flow_id, "new key", options=RPCInvokeOptions(
        load_attribute_map_instances=(notes.load("new key"),))) == "rpc-new key", "RPC write committed"
    assert harness.client.wait_for_attribute_match(
        flow_id, notes, "new key", AttributeMatch.equal_to("rpc-new key"), WaitForAttributeOptions(
            request_timeout=timedelta(seconds=10))) == "rpc-new key"
