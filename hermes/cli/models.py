"""`hermes models`: the models the configured endpoint offers (its /v1/models)."""

from __future__ import annotations

import json

import click

from hermes.cli._env import find_api_key
from hermes.config import endpoint_transport, load_config


@click.command()
@click.option("--base-url", help="The endpoint to ask (default: model.base_url).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of model ids.")
def models(base_url: str | None, as_json: bool) -> None:
    """List the models the endpoint offers; the configured one is marked with *."""
    from hermes.agent.model.client import ModelClient

    config = load_config()
    base_url = base_url or config.get("model.base_url")
    current = config.get("model.default")
    transport = endpoint_transport(config, base_url)
    client = ModelClient(
        find_api_key()[0],
        base_url,
        current,
        timeout=config.get("model.request_timeout"),
        max_retries=config.get("model.max_retries"),
        headers=dict(transport.headers),
        verify=transport.verify,
    )
    try:
        ids = sorted(client.list_models())
    finally:
        client.close()
    if as_json:
        click.echo(json.dumps(ids, indent=2))
        return
    if not ids:
        click.echo(f"{base_url} lists no models.")
        return
    for model_id in ids:
        click.echo(f"{'*' if model_id == current else ' '} {model_id}")
