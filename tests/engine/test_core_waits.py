"""Engine core, pure Wait evaluation: canonical any_of order, shared Channel queues in all_of,
combinations, and the bounds of Channel conditions (no server needed)."""

from __future__ import annotations

from dex.dexpb import dex_pb2 as pb

from dex_agents.engine import waits

PENDING = pb.INTERNAL_TIMER_STATUS_PENDING
FIRED = pb.INTERNAL_TIMER_STATUS_FIRED


def channel(name: str, *, low: int | None = None, high: int | None = None, cid: str = "") -> pb.ChannelCondition:
    condition = pb.ChannelCondition(channel_name=name, condition_id=cid)
    if low is not None:
        condition.at_least = low
    if high is not None:
        condition.at_most = high
    return condition


def wait(kind: int, timers: int = 0, channels: tuple[pb.ChannelCondition, ...] = (),
         combos: tuple[tuple[str, ...], ...] = ()) -> pb.WaitingCondition:
    return pb.WaitingCondition(
        waiting_condition_type=kind,  # type: ignore[arg-type]
        timer_conditions=[pb.TimerCondition(condition_id=f"t{i}", duration_seconds=5) for i in range(timers)],
        channel_conditions=list(channels),
        condition_combinations=[pb.ConditionCombination(condition_ids=list(c)) for c in combos],
    )


def test_any_of_prefers_a_fired_timer_over_a_ready_channel() -> None:
    w = wait(pb.WAITING_CONDITION_TYPE_ANY_COMPLETED, 1, (channel("A", low=1, high=1),))
    selection = waits.evaluate(w, [FIRED], {"A": 3})
    assert selection is not None and dict(selection.consume) == {}, "the Timer wins and consumes nothing"


def test_any_of_takes_the_first_ready_channel_in_argument_order() -> None:
    w = wait(pb.WAITING_CONDITION_TYPE_ANY_COMPLETED, 1, (channel("B", low=1, high=1), channel("A", low=1, high=1)))
    assert waits.evaluate(w, [PENDING], {"A": 1}) is not None
    selection = waits.evaluate(w, [PENDING], {"A": 1, "B": 2})
    assert selection is not None and dict(selection.consume) == {0: 1}


def test_all_of_needs_every_condition_and_shares_one_channel_queue() -> None:
    w = wait(pb.WAITING_CONDITION_TYPE_ALL_COMPLETED, 0, (channel("A", low=1, high=1), channel("A", low=2, high=2)))
    assert waits.evaluate(w, [], {"A": 2}) is None, "three messages are needed"
    selection = waits.evaluate(w, [], {"A": 3})
    assert selection is not None and dict(selection.consume) == {0: 1, 1: 2}


def test_bounds_at_least_waits_and_at_most_caps_consumption() -> None:
    at_least = wait(pb.WAITING_CONDITION_TYPE_ALL_COMPLETED, 0, (channel("A", low=2),))
    assert waits.evaluate(at_least, [], {"A": 1}) is None
    taken = waits.evaluate(at_least, [], {"A": 5})
    assert taken is not None and dict(taken.consume) == {0: 5}, "no upper bound consumes all queued"
    at_most = wait(pb.WAITING_CONDITION_TYPE_ALL_COMPLETED, 0, (channel("A", high=2),))
    empty = waits.evaluate(at_most, [], {})
    assert empty is not None and dict(empty.consume) == {0: 0}, "at_most alone never blocks"


def test_any_combination_picks_the_first_complete_combination() -> None:
    w = wait(pb.WAITING_CONDITION_TYPE_ANY_COMBINATION_COMPLETED, 0,
             (channel("A", low=1, high=1, cid="a"), channel("B", low=1, high=1, cid="b"),
              channel("C", low=1, high=1, cid="c")), (("a", "b"), ("c",)))
    assert waits.evaluate(w, [], {"A": 1}) is None
    only_c = waits.evaluate(w, [], {"A": 1, "C": 1})
    assert only_c is not None and dict(only_c.consume) == {2: 1}, "A stays queued"
    both = waits.evaluate(w, [], {"A": 1, "B": 1, "C": 1})
    assert both is not None and dict(both.consume) == {0: 1, 1: 1}


def test_results_mark_only_chosen_channels_completed() -> None:
    w = wait(pb.WAITING_CONDITION_TYPE_ANY_COMPLETED, 1, (channel("A", low=1, high=1),))
    selection = waits.evaluate(w, [PENDING], {"A": 1})
    assert selection is not None
    values = [pb.Value(string_value="x")]
    results = waits.results(w, [PENDING], selection, {0: values})
    assert [r.condition_status for r in results.timer_results] == [pb.CONDITION_STATUS_WAITING]
    assert [(r.channel_name, r.condition_status, list(r.values)) for r in results.channel_results] == [
        ("A", pb.CONDITION_STATUS_COMPLETED, values)]


def test_validate_rejects_what_the_engine_cannot_serve() -> None:
    assert waits.validate(pb.WaitingCondition()) is not None
    bad_bounds = wait(pb.WAITING_CONDITION_TYPE_ALL_COMPLETED, 0, (channel("A", low=3, high=1),))
    assert waits.validate(bad_bounds) is not None
    unknown_id = wait(pb.WAITING_CONDITION_TYPE_ANY_COMBINATION_COMPLETED, 0, (channel("A", cid="a", low=1),), (("zz",),))
    assert waits.validate(unknown_id) is not None
    sub_flow = pb.WaitingCondition(sub_flow_conditions=[pb.SubFlowCondition(condition_id="s")])
    assert waits.validate(sub_flow) is not None
    assert waits.validate(wait(pb.WAITING_CONDITION_TYPE_ALL_COMPLETED, 1)) is None
