"""Large values by reference, as Dex passes them: a task whose large values add up to more than the pull
Worker's 4 MiB frame reaches it, each large value once (the SDK loads it with ``LoadBlobs`` and keeps
it in its BlobCache), and ``LoadBlobs`` answers what the engine referenced and nothing else."""

from __future__ import annotations

from typing import Final

import grpc
import pytest
from dex import Attribute, Context, PersistenceSchema, Step, StepDecision, StepList, go_to, graceful_complete
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc

from dex_agents.engine.blobs import BLOB_THRESHOLD_BYTES, Blobs, referenced
from dex_agents.engine.server import EngineServer
from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow

MEGABYTE: Final = 1024 * 1024
PARTS: Final = [Attribute(f"Part{index}", str) for index in range(6)]


def part(index: int) -> str:
    return chr(ord("a") + index) * MEGABYTE


class WriteFirstHalf(Step[None]):
    def execute(self, context: Context, input: None) -> StepDecision:
        for index in range(3):
            PARTS[index].set(context, part(index))
        return go_to(WriteSecondHalf, None)


class WriteSecondHalf(Step[None]):
    """Its task holds three 1 MiB Attributes (the first half); it writes three more."""

    def execute(self, context: Context, input: None) -> StepDecision:
        assert [PARTS[index].get(context) for index in range(3)] == [part(index) for index in range(3)]
        for index in range(3, 6):
            PARTS[index].set(context, part(index))
        return go_to(ReadAll, None)


class ReadAll(Step[None]):
    """Its task holds six 1 MiB Attributes: more than a pull Worker's 4 MiB frame, unless referenced."""

    def execute(self, context: Context, input: None) -> StepDecision:
        values = [PARTS[index].get(context) for index in range(6)]
        return graceful_complete(all(value == part(index) for index, value in enumerate(values)))


class LargeFlow(NamedFlow[None]):
    def get_steps(self) -> StepList[None]:
        return StepList.start_step(WriteFirstHalf()).other_steps(WriteSecondHalf(), ReadAll())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(*PARTS)


def test_a_task_whose_large_values_exceed_the_frame_limit_reaches_the_worker(dex: DexFixture) -> None:
    harness, flow_id = dex.start_flow(LargeFlow(dex.flow_type()), None)
    assert harness.result(flow_id).single_output(bool) is True


def test_only_large_values_become_references_and_a_task_without_any_is_sent_as_it_is() -> None:
    task = pb.PollWorkerTask(task_id="t-1")
    task.execute.context.flow_id = "f-1"
    task.execute.step_input.string_value = "small"
    task.execute.attributes.add(key="Big", value=pb.Value(obj_value=pb.EncodedObject(
        encoding="json", payload=b'"' + b"x" * (BLOB_THRESHOLD_BYTES + 1) + b'"')))
    task.execute.attributes.add(key="Small", value=pb.Value(int_value=3))
    unchanged = pb.PollWorkerTask(task_id="t-2")
    unchanged.execute.step_input.string_value = "small"
    assert referenced(unchanged)[0] is unchanged
    sent, blobs = referenced(task)
    assert sent is not task and len(blobs) == 1
    assert sent.execute.attributes[0].value.WhichOneof("kind") == "internal_blob_id_for_obj_value"
    assert sent.execute.attributes[1].value.int_value == 3
    assert task.execute.attributes[0].value.WhichOneof("kind") == "obj_value", "the task itself keeps its values"
    store = Blobs()
    again = store.outgoing(task)
    reference = again.execute.attributes[0].value
    assert store.load("f-1", reference) == task.execute.attributes[0].value
    assert store.load("another-flow", reference) is None


def test_load_blobs_answers_not_found_for_a_value_the_engine_never_referenced(own_engine: EngineServer) -> None:
    with grpc.insecure_channel(own_engine.address) as channel:
        stub = dex_pb2_grpc.FlowServiceStub(channel)
        request = pb.LoadBlobsRequest(entries=[pb.LoadBlobRequestEntry(
            flow_id="f-1", blob_value=pb.Value(internal_blob_id_for_obj_value="sha256:00"))])
        with pytest.raises(grpc.RpcError) as raised:
            stub.LoadBlobs(request)
    assert raised.value.code() is grpc.StatusCode.NOT_FOUND
