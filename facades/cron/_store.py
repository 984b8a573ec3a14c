"""The store of the facade's home (``hermes_constants.get_hermes_home()``), opened per call.

Every ``cron.*`` call opens the home it is called for (a reader such as hermes-webui
switches ``HERMES_HOME`` per request) and closes it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hermes_constants import get_hermes_home

from hermes.config import load_config
from hermes.cron import CronStore, files
from hermes.state import SessionDB
from hermes.state.errors import HermesAgentStoreError
from hermes.state.location import STATE_FILE, StoreLocation, location_of

# The run ``cron.scheduler.run_job`` waited for, per job, until 0.19's ``mark_job_run``
# after it: the gateway that ran it recorded it, so that call records nothing more. A file
# in the home, since hermes-webui calls run_job in a child process and mark_job_run in its
# own.


def home() -> Path:
    return get_hermes_home()


def location(of: Path) -> StoreLocation:
    configured = load_config(of / "config.yaml").get("state.url")
    return location_of(configured) if configured else StoreLocation(path=of / STATE_FILE)


@contextmanager
def cron_store(*, read_only: bool) -> Iterator[CronStore | None]:
    """The home's CronStore (its files follow each change). None, to read: no store yet,
    or Hermes Agent's own store not upgraded yet (its jobs.json is then still the truth)."""
    where = home()
    place = location(where)
    if read_only and not place.exists:
        yield None
        return
    try:
        db = SessionDB(db_path=place.path, url=place.url, read_only=read_only)
    except HermesAgentStoreError as exc:
        if not read_only:
            raise ValueError(
                f"{place.label} is still Hermes Agent's store: run `hermes import hermes-agent` "
                "to upgrade it, then change the jobs."
            ) from exc
        yield None
        return
    try:
        yield CronStore(db.backend, read_only=db.read_only, on_change=files.writer(where))
    finally:
        db.close()
