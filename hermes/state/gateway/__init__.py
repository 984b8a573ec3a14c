"""The gateway's and the HTTP API's tables: their rows share transactions with
conversations and messages, so their queries live in the store (``db.gateway``).

    store.py         GatewayStore, reached as ``db.gateway``
    routes.py        which conversation a chat, thread or user talks to
    queue.py         input waiting for a busy conversation, its owners' heartbeats
    cut_turns.py     turns a crash cut off: tips that end without an answer
    api_runs.py      ``/v1/runs``: runs, their events, their input
    api_requests.py  HTTP requests a client may retry: which try runs the turn
    webhook_deliveries.py  webhook events accepted once, and where their answers go
"""
