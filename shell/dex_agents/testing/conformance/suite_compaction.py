"""Conformance scenarios of history compaction (issue 24): reactive, proactive and requested
compactions, a second compaction over the first, a tool call and its result at the boundary, a recent
part too long to help, and a Worker killed during the summarization call.

``chat:<n>`` turns run on a model whose window holds ``script.WINDOW_USER_MESSAGES`` user messages;
the summarization call answers ``summary of <k> user messages``, ``k`` counting every user message the
summary covers (its previous summary's included), so a message summarized twice or lost shows in ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence

from dex_agents.pure.machine.compaction import SUMMARY_PREFIX, TRANSCRIPT_HEADER, CompactionPolicy
from dex_agents.pure.values.session import AgentEvent, MessageRole
from dex_agents.testing.conformance import script
from dex_agents.testing.conformance.fixtures import Conformance, assert_tool_results_follow_calls
from dex_agents.testing.conformance.harness import ConformanceSession
from dex_agents.testing.conformance.model import SeenMessage, arm_gate
from dex_agents.testing.conformance.suite_crashes import assert_session_consistent
from dex_agents.testing.conformance.suite_turns import of_type
from dex_agents.testing.conformance.tools import LOOKUP_ORDER

COMPACTED = "dex_agents.history_compacted"


def _chat(session: ConformanceSession, first: int, last: int, prefix: str = script.CHAT_PREFIX) -> None:
    """Turns ``<prefix><first>`` .. ``<prefix><last>``, each waited for (the session already started)."""
    for number in range(first, last + 1):
        assert session.send(f"{prefix}{number}")
        session.wait_for_turns(number)


def _summarizations(calls: Sequence[Sequence[SeenMessage]]) -> list[str]:
    """The transcripts of the summarization calls, in order."""
    return [call[-1].text or "" for call in calls if call and (call[-1].text or "").startswith(TRANSCRIPT_HEADER)]


def _summary_seen(call: Sequence[SeenMessage]) -> str | None:
    first = call[0] if call else None
    text = first.text or "" if first is not None and first.role == "user" else ""
    return text[len(SUMMARY_PREFIX):] if text.startswith(SUMMARY_PREFIX) else None


def _compactions(session: ConformanceSession) -> list[AgentEvent]:
    return of_type(session.events(), COMPACTED)


class CompactionConformance:
    """Scenarios of a session whose history outgrows the model's context window."""

    def test_a_refused_call_compacts_and_reruns_and_a_second_compaction_builds_on_the_first(
            self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start(f"{script.CHAT_PREFIX}1")
        session.wait_for_turns(1)
        _chat(session, 2, 6)
        state = session.state()
        assert (state.completed_turn_count, state.failed_turn_count) == (6, 0), state.last_turn_error
        compactions = _compactions(session)
        assert [e.payload["trigger"] for e in compactions] == ["reactive"] * len(compactions) and len(compactions) >= 2
        failed = of_type(session.events(), "dex_agents.model_call_failed")
        assert len(failed) == len(compactions) and all(e.payload["retrying"] is True for e in failed)
        summaries = [call for call in session.model_calls() if _summary_seen(call) is not None]
        assert summaries, "a model call after the compaction sees the summary first"
        # every model call after a compaction sees the summary, then whole turns only
        last_call = session.model_calls()[-1]
        covered = int((_summary_seen(last_call) or "").split()[2])
        kept_users = [m.text for m in last_call[1:] if m.role == "user"]
        assert covered + len(kept_users) == 6, (covered, kept_users)  # none lost, none summarized twice
        assert kept_users[-1] == f"{script.CHAT_PREFIX}6"
        transcripts = _summarizations(session.model_calls())
        assert len(transcripts) == len(compactions)
        assert script.SUMMARY_PREFIX in transcripts[1], "the second compaction reads the first summary"
        assert [m.text for m in session.messages() if m.role is MessageRole.USER] == [
            f"{script.CHAT_PREFIX}{n}" for n in range(1, 7)], "the transcript is never cut"
        assert session.steps().count("CompactHistory") == len(compactions)

    def test_the_estimate_past_trigger_tokens_compacts_before_the_call(self, conformance: Conformance) -> None:
        session = conformance.session(compaction=CompactionPolicy(trigger_tokens=1))
        session.start(f"{script.TALK_PREFIX}1")
        session.wait_for_turns(1)
        _chat(session, 2, 4, script.TALK_PREFIX)
        assert session.state().completed_turn_count == 4
        compactions = _compactions(session)
        assert compactions and {e.payload["trigger"] for e in compactions} == {"proactive"}
        assert not of_type(session.events(), "dex_agents.model_call_failed"), "no call was refused"
        last_call = session.model_calls()[-1]
        assert _summary_seen(last_call) == f"{script.SUMMARY_PREFIX}2 user messages"
        assert [m.text for m in last_call if m.role == "user"][1:] == [f"{script.TALK_PREFIX}3", f"{script.TALK_PREFIX}4"]

    def test_compact_history_compacts_before_the_next_model_call(self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start(f"{script.TALK_PREFIX}1")
        session.wait_for_turns(1)
        _chat(session, 2, 3, script.TALK_PREFIX)
        assert session.compact() is True
        assert session.send(f"{script.TALK_PREFIX}4")
        session.wait_for_turns(4)
        assert [e.payload["trigger"] for e in _compactions(session)] == ["requested"]
        assert _summary_seen(session.model_calls()[-1]) == f"{script.SUMMARY_PREFIX}2 user messages"

    def test_a_tool_call_and_its_result_are_summarized_together(self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start("one round")
        session.wait_for_turns(1)
        _chat(session, 2, 4)
        assert session.state().completed_turn_count == 4
        (transcript, *_) = _summarizations(session.model_calls())
        assert "Assistant called tool lookup_order" in transcript and "Tool lookup_order returned:" in transcript
        for seen in session.model_calls():
            assert_tool_results_follow_calls(seen)
        assert len(session.tool_runs(LOOKUP_ORDER)) == 1

    def test_when_the_recent_part_alone_is_too_long_the_turn_fails_once_and_the_next_works(
            self, conformance: Conformance) -> None:
        session = conformance.session()
        session.start(f"{script.HUGE_PREFIX}1")
        state = session.wait_for_turns(1)
        assert state.failed_turn_count == 1 and "compaction cannot help" in (state.last_turn_error or "")
        assert len(session.model_calls()) == 1 and not _compactions(session)
        assert session.send(script.HELLO)
        assert session.wait_for_turns(2).completed_turn_count == 1

    def test_a_worker_killed_during_the_summarization_reruns_it_and_loses_nothing(
            self, conformance: Conformance) -> None:
        session = conformance.session(worker_in_child=True)
        # calls 1-3 answer chat:1-3; call 4 is refused; call 5 is the summarization
        gate = arm_gate(session.state_directory, "model-5")
        session.start_worker()
        session.start(f"{script.CHAT_PREFIX}1")
        session.wait_for_turns(1)
        assert session.send(f"{script.CHAT_PREFIX}2")
        session.wait_for_turns(2)
        assert session.send(f"{script.CHAT_PREFIX}3")
        session.wait_for_turns(3)
        assert session.send(f"{script.CHAT_PREFIX}4")
        gate.wait_until_reached()
        session.kill_worker()
        gate.release()
        session.start_worker()
        state = session.wait_for_turns(4)
        assert state.completed_turn_count == 4
        transcripts = _summarizations(session.model_calls())
        assert len(transcripts) == 2 and transcripts[0] == transcripts[1], "the summarization ran again, the same"
        (compacted,) = _compactions(session)
        assert compacted.payload["summarized_messages"] == 4  # turns 1 and 2: a user message and an answer each
        assert _summary_seen(session.model_calls()[-1]) == f"{script.SUMMARY_PREFIX}2 user messages"
        assert_session_consistent(session, 4)


__all__ = ["COMPACTED", "CompactionConformance"]
