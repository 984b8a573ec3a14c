"""The model transport: how a request reaches the model endpoint and its answer comes back.

What belongs here: ``client`` (``ModelClient``: the request body, the retry policy,
interrupting a running call, the answer assembled into a ``ModelResponse``, every
transport and ``openai`` error translated into ``hermes.agent.errors``), ``chat_post``
and ``kept_http`` (a plain answer's POST on a kept connection), ``call_threads`` (the
threads interruptible calls run in) and ``provider_usage`` (a provider's ``usage``
block read into the store's buckets).

What does not: the turn, the context and its compression. Nothing here imports the
rest of ``hermes.agent`` but its error tree (``hermes.agent.errors``).
"""
