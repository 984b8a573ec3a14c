"""A group of tables on one backend: the read and write transactions they share.

The gateway's tables, the API's runs and the scheduler's jobs each live beside the
conversation tables in the same database; each is a ``Tables`` subclass, so a store
opened read-only refuses their writes the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hermes.state.backend import Backend, Tx
from hermes.state.errors import ReadOnlyStoreError

T = TypeVar("T")


class Tables:
    def __init__(self, backend: Backend, *, read_only: bool = False) -> None:
        self.backend = backend
        self.read_only = read_only

    def _write(self, fn: Callable[[Tx], T]) -> T:
        if self.read_only:
            raise ReadOnlyStoreError(self.backend.location)
        return self.backend.transact(fn, write=True)

    def _read(self, fn: Callable[[Tx], T]) -> T:
        return self.backend.transact(fn, write=False)
