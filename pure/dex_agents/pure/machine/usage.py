"""``AgentUsage`` arithmetic: the empty usage and field-by-field addition.

Invariant: ``add_agent_usage`` is associative and commutative with ``empty_agent_usage()`` as its
identity, so the session total is the sum of every recorded model call's usage in any order.
"""

from __future__ import annotations

from dex_agents.pure.values.session import AgentUsage


def empty_agent_usage() -> AgentUsage:
    """Usage of nothing: every count zero."""
    return AgentUsage()


def add_agent_usage(left: AgentUsage, right: AgentUsage) -> AgentUsage:
    """Add two usages field by field.

    >>> add_agent_usage(AgentUsage(requests=1, input_tokens=3), AgentUsage(requests=1)).requests
    2
    """
    return AgentUsage(
        requests=left.requests + right.requests,
        input_tokens=left.input_tokens + right.input_tokens,
        output_tokens=left.output_tokens + right.output_tokens,
        cache_read_tokens=left.cache_read_tokens + right.cache_read_tokens,
        cache_write_tokens=left.cache_write_tokens + right.cache_write_tokens,
    )


def is_valid_usage(usage: AgentUsage) -> bool:
    """True when every count is a non-negative int (``bool`` is not a count)."""
    counts = (
        usage.requests,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
    )
    return all(type(count) is int and count >= 0 for count in counts)


__all__ = ["add_agent_usage", "empty_agent_usage", "is_valid_usage"]
