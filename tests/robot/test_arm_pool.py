"""ArmPool: reads overlap (each waits for the other), sends run in turn on the caller's thread."""

import threading

import pytest

from robot.arm_pool import ArmPool


@pytest.fixture
def pool():
    pool = ArmPool(workers=4)
    yield pool
    pool.close()


def test_run_overlaps_the_calls(pool):
    # Each call can only finish once every other one has started: one after the other, they
    # would wait forever (the barrier's timeout turns that into BrokenBarrierError).
    barrier = threading.Barrier(4, timeout=10)

    def call(name: str):
        return lambda: (barrier.wait(), name)[1]

    results = pool.run({name: call(name) for name in ("a", "b", "c", "d")})
    assert results == {"a": "a", "b": "b", "c": "c", "d": "d"}


def test_run_raises_the_first_error_after_every_call_finished(pool):
    finished = []
    release = threading.Event()

    def failing():
        raise RuntimeError("left bus")

    def slow():
        release.wait(10)
        finished.append("right")
        return 1

    threading.Timer(0.05, release.set).start()
    with pytest.raises(RuntimeError, match="left bus"):
        pool.run({"left": failing, "right": slow})
    assert finished == ["right"]


def test_send_runs_in_order_on_the_calling_thread(pool):
    seen = []

    def call(name: str):
        return lambda: seen.append((name, threading.get_ident())) or name

    assert pool.send({"left": call("left"), "right": call("right")}) == {"left": "left", "right": "right"}
    assert seen == [("left", threading.get_ident()), ("right", threading.get_ident())]


def test_send_still_sends_to_the_other_arm_when_one_fails(pool):
    sent = []

    def failing():
        raise OSError("left port gone")

    with pytest.raises(OSError, match="left port gone"):
        pool.send({"left": failing, "right": lambda: sent.append("right")})
    assert sent == ["right"]
