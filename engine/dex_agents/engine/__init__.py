"""A local Dex engine: Dex's gRPC protocol served to the unmodified SDK Client and pull Worker,
with its state in SQLite. The embedded default for tests and the demo."""
