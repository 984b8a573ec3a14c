"""Which conversation each context engine was told: by the engine's identity, gone with it."""

from __future__ import annotations

import gc

from hermes.agent.engine_compressor import _Told


class Engine:
    pass


class Slotted:
    __slots__ = ("name",)  # no __weakref__: no weak reference takes it


class Equal:
    def __eq__(self, other: object) -> bool:
        return True  # every instance "equal": still told one by one

    __hash__ = object.__hash__


def test_an_engine_dropped_with_its_agent_leaves_nothing_behind() -> None:
    told = _Told()
    for n in range(100):
        engine = Engine()
        told.set(engine, f"conversation-{n}")
        assert told.get(engine) == f"conversation-{n}"
        del engine
    gc.collect()
    assert told._told == {} and told._watched == {}


def test_a_new_engine_at_a_freed_address_is_told_afresh() -> None:
    told = _Told()
    old = Engine()
    told.set(old, "c1")
    address = id(old)
    del old
    gc.collect()
    reused = [Engine() for _ in range(1000)]  # CPython hands freed addresses out again
    assert all(told.get(engine) is None for engine in reused)
    assert address not in told._told


def test_engines_are_told_by_identity_not_equality() -> None:
    told = _Told()
    first, second = Equal(), Equal()
    told.set(first, "c1")
    assert told.get(second) is None
    told.set(first, None)
    assert told.get(first) is None


def test_an_engine_without_weak_references_is_kept_and_told() -> None:
    told = _Told()
    engine = Slotted()
    told.set(engine, "c1")
    assert told.get(engine) == "c1"
    told.set(engine, "c2")
    assert told.get(engine) == "c2"
