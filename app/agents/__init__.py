"""Wiring Mnemo into AI coding agents: `mnemo agents install | uninstall | status`.

Each agent keeps its own config file (JSON or TOML); Mnemo merges its MCP server entry (and,
where the agent runs one, its session-start hook) into it, keeping every other entry, with a
backup beside it, and takes exactly that out again (`configs`, `wiring`).
"""
