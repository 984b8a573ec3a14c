"""The HTTP API: an OpenAI-compatible server and everything only it needs.

What belongs here: the aiohttp server and its routes (``server``: the app and the
models list; ``chat_completions``, ``responses``: the Responses API; ``runs``: runs and
their events; ``sessions``, ``jobs``, ``capabilities``, ``openapi``), the refusals at
its edge (``guard``: Content-Type, Origin, Host; ``key``: the bearer key), the reading
of a request into a turn's options (``request_shape``, ``request_options``,
``model_parameters``, ``responses_request``, ``responses_parameters``), who a request
speaks for (``caller``, ``session_key``) and which conversation it speaks in
(``conversations``), chat-UI side requests (``side_requests``), retried requests
(``retries``), stored responses (``stored_responses``), runs while they run
(``live_runs``) and what the route handlers share (``common``, ``tool_progress``).

What does not: the messaging platforms (``hermes.gateway.adapters``) and what every
surface of the gateway shares (lanes, routing, work, the runner), which this package
uses. The runner imports nothing of it: the server meets the core as a
``hermes.gateway.core.ApiHost``, and ``room.attach`` registers the API's run registry
with every gateway at start-up.
"""
