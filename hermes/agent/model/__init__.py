"""The model transport: how a request reaches the model endpoint and its answer comes back.

What belongs here: ``client`` (``ModelClient``: the request body, the retry policy,
interrupting a running call, the answer assembled into a ``ModelResponse``, every
transport and ``openai`` error translated into ``hermes.agent.errors``), ``chat_post``
and ``kept_http`` (a plain answer's POST on a kept connection), ``call_threads`` (the
threads interruptible calls run in) and ``provider_usage`` (a provider's ``usage``
block read into the store's buckets). ``protocol`` (``Model``) says what the agent needs
of a model client, so another one can be handed in (``AIAgent(model_client=...)``: the
scripted model of ``hermes.testing`` in tests).

Two ways reach the model, and no more:

- a plain (non-streamed) answer, a turn's common call: one POST on a kept
  ``http.client`` connection (``chat_post``), in the caller's thread;
- everything else through the ``openai`` SDK's client: streams (its SSE reading and
  error events), the model list, and a plain answer whose endpoint is behind a proxy or
  redirects.

The first pays for itself by the "Model transport" table of docs/benchmarks.md
(``python -m benchmarks --only transport``): 0.14 ms of CPU per call against 0.78 ms for
the SDK's low-level ``post``, on every model call of every turn. Both raise the SDK's
exceptions, so the retry policy and the error translation see one kind of failure.

What does not belong here: the turn, the context and its compression. Nothing here
imports the rest of ``hermes.agent`` but its error tree (``hermes.agent.errors``).
"""
