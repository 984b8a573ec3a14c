"""The MCP client: servers from config.yaml, their processes, their tools as hermes tools.

spec.py     one server as configured (``ServerSpec``), a value every module names
config.py   ``mcp_servers:`` in config.yaml, read as Hermes Agent 0.19 writes it
launch.py   a stdio server's start: as configured, or in the OS sandbox when asked
hub.py      the process's connections (the ``mcp`` SDK), every wait bounded
tools.py    the servers' tools as hermes tools (``mcp__<server>__<tool>``)
"""
