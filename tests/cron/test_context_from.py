"""A job's ``context_from`` (Hermes Agent 0.19's): each of its runs, on a gateway's
scheduler, is given the latest answer of each job it names before its prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hermes.config import load_config
from hermes.cron import parse
from hermes.cron.service import CronService
from hermes.testing import FakeLLMServer


def test_a_run_is_given_the_latest_answers_of_the_jobs_it_reads(
    make_db, fake_llm: FakeLLMServer, hermes_home: Path
) -> None:
    from hermes.agent import AIAgent

    db = make_db()
    made: list[Any] = []

    def make_agent(**options: Any) -> Any:
        agent = AIAgent(
            base_url=fake_llm.url, model="fake-model", session_db=db, skip_memory=True, **options
        )
        made.append(agent)
        return agent

    async def send(*_: Any) -> None:
        raise AssertionError("a local job delivers nothing")

    service = CronService(
        db, holder="test", make_agent=make_agent, send=send, config=load_config(),
        home=hermes_home, platforms=list,
    )  # fmt: skip
    news = service.store.create_job(name="news", schedule=parse("every 1h"), prompt="find news")
    digest = service.store.create_job(
        name="digest", schedule=parse("every 1h"), prompt="sum up", context_from=[news["id"]]
    )

    def answer(job_id: str) -> str:
        service.store.run_now(job_id)

        async def run() -> None:
            await service.tick_once()
            await asyncio.wait_for(asyncio.gather(*service._running.values()), timeout=120)

        asyncio.run(run())
        return str(service.store.runs(job_id, limit=1)[0]["output"])

    assert answer(news["id"]) == "echo: find news"
    assert answer(digest["id"]) == (
        f"echo: ## Output from job '{news['id']}'\n\necho: find news\n\nsum up"
    )
    for agent in made:
        agent.client.close()
