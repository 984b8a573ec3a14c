"""PostgreSQL store problems through the real `hermes` command: a database that does not
exist and a role the server does not know each get their own sentence and fix (the
throwaway server of scripts/with-postgres; it trusts loopback, so a login is refused
only for an unknown role)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from tests.cli.helpers import doctor_lines
from tests.stores import pg_url


def _changed(url: str, *, user: str | None = None, database: str | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if user is not None:
        netloc = f"{user}@{netloc.rpartition('@')[2]}"
    return urlunsplit(
        parts._replace(netloc=netloc, path=f"/{database}" if database else parts.path)
    )


def test_a_missing_database_says_to_create_it(hermes, cli_env):
    cli_env.vars["HERMES_STATE_URL"] = _changed(pg_url(), database="no_such_hermes_db")
    line = doctor_lines(hermes("doctor", "--offline"))["store"]
    assert line.startswith("FAIL") and "has no database no_such_hermes_db" in line
    assert "Fix: Create it (createdb no_such_hermes_db)" in line
    result = hermes("sessions", "list")
    assert result.returncode == 1 and "has no database no_such_hermes_db" in result.stderr


def test_a_refused_login_says_to_check_the_user_and_password(hermes, cli_env):
    cli_env.vars["HERMES_STATE_URL"] = _changed(pg_url(), user="no_such_role")
    line = doctor_lines(hermes("doctor", "--offline"))["store"]
    assert line.startswith("FAIL") and "refused the login" in line
    assert "Fix: Check the user and password" in line
    assert "Cannot reach" not in line
