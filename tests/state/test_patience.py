"""retry_until: the one retry loop both backends wait with."""

from __future__ import annotations

import time

import pytest

from hermes.state.patience import Backoff, retry_until

QUICK = Backoff(first=0.001, most=0.002)


class Flaky(Exception):
    pass


def _failing(times: int, error: Exception):
    calls: list[int] = []

    def attempt() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "done"

    return attempt, calls


def test_a_transient_error_is_retried_until_the_attempt_succeeds() -> None:
    attempt, calls = _failing(3, Flaky("busy"))
    result = retry_until(
        time.monotonic() + 60, attempt, transient=Flaky, give_up=RuntimeError, backoff=QUICK
    )
    assert result == "done" and len(calls) == 4


def test_past_the_deadline_give_up_turns_the_last_error_into_the_one_raised() -> None:
    attempt, calls = _failing(10**6, Flaky("still busy"))
    with pytest.raises(RuntimeError, match="gave up after still busy") as caught:
        retry_until(
            time.monotonic() + 0.05,
            attempt,
            transient=Flaky,
            give_up=lambda exc: RuntimeError(f"gave up after {exc}"),
            backoff=QUICK,
        )
    assert isinstance(caught.value.__cause__, Flaky)
    assert len(calls) > 1


def test_an_error_of_the_transient_kind_that_is_transient_declines_is_raised_at_once() -> None:
    attempt, calls = _failing(1, Flaky("corrupt"))
    with pytest.raises(Flaky, match="corrupt"):
        retry_until(
            time.monotonic() + 60,
            attempt,
            transient=Flaky,
            is_transient=lambda exc: "busy" in str(exc),
            give_up=RuntimeError,
            backoff=QUICK,
        )
    assert len(calls) == 1


def test_other_errors_are_not_retried() -> None:
    attempt, calls = _failing(1, ValueError("bad"))
    with pytest.raises(ValueError):
        retry_until(
            time.monotonic() + 60, attempt, transient=Flaky, give_up=RuntimeError, backoff=QUICK
        )
    assert len(calls) == 1
