"""The demo support agent (needs the ``pydantic-ai`` extra)."""
