"""Conditional completion: ``force_complete_if_channels_empty`` completes the Flow only when every
named Channel has no pending message, and otherwise moves to its fallback Step instead."""

from __future__ import annotations

from dex import (
    Channel,
    Context,
    FlowStatus,
    PersistenceSchema,
    Step,
    StepDecision,
    StepList,
    StepMovement,
    Wait,
    force_complete_if_channels_empty,
    go_to,
)

from tests.engine.conftest import DexFixture
from tests.engine.harness import NamedFlow

inbox = Channel("Inbox", str)


def complete_unless_inbox_has_mail(output: str) -> StepDecision:
    return force_complete_if_channels_empty(output, StepMovement.of(Drain, output), inbox)


class Start(Step[int]):
    """Publishes ``input`` messages to the inbox, then asks to complete in the next Step."""

    def execute(self, context: Context, input: int) -> StepDecision:
        for index in range(input):
            inbox.publish(context, f"mail-{index}")
        return go_to(Check, "checked")


class Check(Step[str]):
    def execute(self, context: Context, input: str) -> StepDecision:
        return complete_unless_inbox_has_mail(input)


class Drain(Step[str]):
    """The fallback: consumes one message, records it, and tries to complete again."""

    def __init__(self, flow: InboxFlow) -> None:
        self.flow = flow

    def wait_for(self, context: Context, input: str) -> Wait:
        return Wait.until(inbox.for_one())

    def execute(self, context: Context, input: str) -> StepDecision:
        self.flow.probe.record("drained", inbox.results(context)[0])
        return complete_unless_inbox_has_mail("drained")


class InboxFlow(NamedFlow[int]):
    def get_steps(self) -> StepList[int]:
        return StepList.start_step(Start()).other_steps(Check(), Drain(self))

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.of(inbox)


def test_completes_at_once_when_the_channels_are_empty(dex: DexFixture) -> None:
    flow = InboxFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, 0)
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(str) == "checked"
    assert flow.probe.values("drained") == []


def test_pending_messages_route_to_the_fallback_until_the_channel_is_drained(dex: DexFixture) -> None:
    flow = InboxFlow(dex.flow_type())
    harness, flow_id = dex.start_flow(flow, 2)
    result = harness.result(flow_id)
    assert result.status is FlowStatus.COMPLETED
    assert result.single_output(str) == "drained"
    assert flow.probe.values("drained") == ["mail-0", "mail-1"]
