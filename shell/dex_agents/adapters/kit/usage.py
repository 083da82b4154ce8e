"""One model call's usage as ``AgentUsage``: counts a provider left out or reported negative are 0."""

from __future__ import annotations

from dex_agents.pure.values.session import AgentUsage


def _count(value: int | None) -> int:
    return value if value is not None and value > 0 else 0


def model_call_usage(
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read_tokens: int | None = None,
    cache_write_tokens: int | None = None,
) -> AgentUsage:
    """The usage of one model call (``requests`` is 1)."""
    return AgentUsage(
        requests=1,
        input_tokens=_count(input_tokens),
        output_tokens=_count(output_tokens),
        cache_read_tokens=_count(cache_read_tokens),
        cache_write_tokens=_count(cache_write_tokens),
    )


__all__ = ["model_call_usage"]
