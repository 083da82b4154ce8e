"""Agent framework adapters: each turns one framework's agent into a session runner."""
