"""The functional core of dex-agents: the whole agent-session state machine as pure reducers.

Nothing in this package performs I/O, reads a clock, draws randomness or imports Dex: time and ids
arrive as inputs, and every decision comes back as data (a new state plus effect descriptions).
"""
