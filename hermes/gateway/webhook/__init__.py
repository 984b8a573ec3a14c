"""Hermes Agent 0.19's webhook platform: external services' signed events run turns.

``routes`` (config.yaml and ``webhook_subscriptions.json``), ``signatures`` (who sent
it, and what its signature proves), ``events`` (what it says: event type, delivery
key, prompt), ``admission`` (how many connections a sender may hold open) and
``server`` (the adapter, its HTTP endpoint and the delivery of answers). The store
remembers each accepted delivery (``hermes.state.gateway.webhook_deliveries``).
"""
