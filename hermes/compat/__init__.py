"""Hermes Agent 0.19 compatibility: its ``hermes_state`` / ``run_agent`` names, and import.

A thin layer over the real store and agent. ``session_db.SessionDB`` adds Hermes
Agent's method names, signatures and return shapes to ``hermes.state.SessionDB``;
every method goes through the store's own transactions, lease, routing and
exactly-once rules. ``agent.AIAgent`` maps Hermes Agent's constructor keywords onto
``hermes.agent.AIAgent``. ``importer`` brings a Hermes Agent ``state.db`` over;
``upgrade`` turns one where hermes keeps its store into a hermes store in place (or
shows it read-only).
Nothing in the store or the agent imports this room.
"""
