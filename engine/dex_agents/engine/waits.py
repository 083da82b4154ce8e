"""Pure evaluation of a Step's Wait: is it satisfied, and what does it consume?

Rules (Dex's documented semantics):
- a Timer condition is ready once fired or skipped; a SubFlow condition once its run closed;
- a Channel condition needs ``at_least`` queued messages (0 when unset) and then consumes the
  messages queued at that moment up to ``at_most`` (all when unset), oldest first;
- ``all_of`` needs every condition; ``any_of`` picks the first ready condition in canonical order
  (Timers, then Channels, then SubFlows, argument order within each kind); ``any_combination_of`` picks the first
  combination whose conditions are all ready. Only the chosen conditions consume messages;
- conditions on the same Channel share its queue in argument order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dex.dexpb import dex_pb2 as pb

_TIMER_DONE = (pb.INTERNAL_TIMER_STATUS_FIRED, pb.INTERNAL_TIMER_STATUS_SKIPPED)


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """The satisfied part of a Wait: chosen channel condition index -> messages to consume."""

    consume: Mapping[int, int]


NO_SUB_FLOWS: Sequence[bool] = ()


def validate(waiting: pb.WaitingCondition) -> str | None:
    """A reason the Wait cannot be served by this engine, or None."""
    if not waiting.timer_conditions and not waiting.channel_conditions and not waiting.sub_flow_conditions:
        return "Wait requires at least one condition"
    for sub_flow in waiting.sub_flow_conditions:
        if not sub_flow.sub_flow_type or not sub_flow.start_step_type:
            return "SubFlow condition requires a Flow type and a start Step type"
    for timer in waiting.timer_conditions:
        if timer.duration_seconds < 0:
            return "timer duration must not be negative"
    for channel in waiting.channel_conditions:
        if not channel.channel_name:
            return "channel condition requires a channel name"
        low = channel.at_least if channel.HasField("at_least") else 0
        if low < 0 or (channel.HasField("at_most") and channel.at_most < max(low, 0)):
            return f"invalid channel condition bounds on {channel.channel_name}"
    if waiting.waiting_condition_type == pb.WAITING_CONDITION_TYPE_ANY_COMBINATION_COMPLETED:
        known = _ids(waiting)
        if not waiting.condition_combinations:
            return "any_combination_of requires a combination"
        for combination in waiting.condition_combinations:
            if not combination.condition_ids:
                return "empty condition combination"
            for condition_id in combination.condition_ids:
                if condition_id not in known:
                    return f"unknown condition id in combination: {condition_id}"
    return None


def evaluate(
    waiting: pb.WaitingCondition,
    timer_status: Sequence[int],
    available: Mapping[str, int],
    sub_flow_done: Sequence[bool] = NO_SUB_FLOWS,
) -> Selection | None:
    """The selection when the Wait is satisfied now, else None (``sub_flow_done[i]``: the run of
    SubFlow condition ``i`` closed)."""
    kind = waiting.waiting_condition_type
    timers = list(range(len(waiting.timer_conditions)))
    channels = list(range(len(waiting.channel_conditions)))
    sub_flows = list(range(len(waiting.sub_flow_conditions)))
    done = [index < len(sub_flow_done) and sub_flow_done[index] for index in sub_flows]
    if kind == pb.WAITING_CONDITION_TYPE_ANY_COMPLETED:
        for index in timers:
            if timer_status[index] in _TIMER_DONE:
                return Selection(consume={})
        for index in channels:
            chosen = _allocate(waiting, [], [index], timer_status, available)
            if chosen is not None:
                return chosen
        return Selection(consume={}) if any(done) else None
    if kind == pb.WAITING_CONDITION_TYPE_ANY_COMBINATION_COMPLETED:
        by_id = _ids(waiting)
        for combination in waiting.condition_combinations:
            picked = [by_id[c] for c in combination.condition_ids if c in by_id]
            if not all(done[i] for k, i in picked if k == "s"):
                continue
            chosen = _allocate(waiting, [i for k, i in picked if k == "t"], [i for k, i in picked if k == "c"],
                               timer_status, available)
            if chosen is not None:
                return chosen
        return None
    if not all(done):
        return None
    return _allocate(waiting, timers, channels, timer_status, available)


def results(
    waiting: pb.WaitingCondition,
    timer_status: Sequence[int],
    selection: Selection,
    consumed: Mapping[int, Sequence[pb.Value]],
    sub_flow_results: Mapping[int, pb.FlowResult] | None = None,
) -> pb.ConditionResults:
    """The ConditionResults handed to ``execute`` (timers by index, chosen channels' values, and
    every SubFlow's result by index: its terminal result, or a RUNNING snapshot without outputs)."""
    out = pb.ConditionResults()
    for index in range(len(waiting.sub_flow_conditions)):
        result = (sub_flow_results or {}).get(index)
        out.sub_flow_results.append(result if result is not None else pb.FlowResult(flow_status=pb.FLOW_STATUS_RUNNING))
    for index, timer in enumerate(waiting.timer_conditions):
        done = timer_status[index] in _TIMER_DONE
        out.timer_results.add(
            condition_id=timer.condition_id,
            condition_status=pb.CONDITION_STATUS_COMPLETED if done else pb.CONDITION_STATUS_WAITING,
        )
    for index, channel in enumerate(waiting.channel_conditions):
        chosen = index in selection.consume
        out.channel_results.add(
            condition_id=channel.condition_id,
            channel_name=channel.channel_name,
            condition_status=pb.CONDITION_STATUS_COMPLETED if chosen else pb.CONDITION_STATUS_WAITING,
            values=list(consumed.get(index, ())),
        )
    return out


def _ids(waiting: pb.WaitingCondition) -> dict[str, tuple[str, int]]:
    ids: dict[str, tuple[str, int]] = {}
    for index, timer in enumerate(waiting.timer_conditions):
        if timer.condition_id:
            ids[timer.condition_id] = ("t", index)
    for index, channel in enumerate(waiting.channel_conditions):
        if channel.condition_id:
            ids[channel.condition_id] = ("c", index)
    for index, sub_flow in enumerate(waiting.sub_flow_conditions):
        if sub_flow.condition_id:
            ids[sub_flow.condition_id] = ("s", index)
    return ids


def _allocate(
    waiting: pb.WaitingCondition,
    timers: Sequence[int],
    channels: Sequence[int],
    timer_status: Sequence[int],
    available: Mapping[str, int],
) -> Selection | None:
    if any(timer_status[index] not in _TIMER_DONE for index in timers):
        return None
    remaining = dict(available)
    consume: dict[int, int] = {}
    for index in channels:
        condition = waiting.channel_conditions[index]
        have = remaining.get(condition.channel_name, 0)
        need = condition.at_least if condition.HasField("at_least") else 0
        if have < need:
            return None
        take = min(have, condition.at_most) if condition.HasField("at_most") else have
        remaining[condition.channel_name] = have - take
        consume[index] = take
    return Selection(consume=consume)
