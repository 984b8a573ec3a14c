"""Hermes Agent 0.19's webhook platform: external services' signed events run turns.

``routes`` (config.yaml and ``webhook_subscriptions.json``), ``signatures`` (who sent
it), ``events`` (what it says: event type, delivery id, prompt) and ``server`` (the
adapter, its HTTP endpoint and the delivery of answers). The store remembers each
accepted delivery (``hermes.state.gateway.webhook_deliveries``).
"""
