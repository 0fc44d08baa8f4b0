"""Driving several arms' buses at the same time.

Each arm has its own serial line, so their transactions can overlap: a bimanual tick costs the
slowest bus instead of the sum of all of them (LeRobot's bimanual classes go one arm after the
other). The guarded port waits in `select()`, so worker threads do not fight over the GIL.
Each call for a given arm runs alone: `run` waits for all of them before returning.
"""

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

from robot.realtime import make_realtime


class ArmPool:
    """A few persistent worker threads that run one call per arm concurrently."""

    def __init__(self, workers: int = 4, realtime_priority: int = 0) -> None:
        # Bus threads wait in select() and wake on a reply: real-time priority (when permitted)
        # keeps a busy machine from delaying that wake-up.
        self._executor = ThreadPoolExecutor(
            max_workers=workers,
            thread_name_prefix="arm-io",
            initializer=make_realtime,
            initargs=(realtime_priority,),
        )

    def run[T](self, calls: Mapping[str, Callable[[], T]]) -> dict[str, T]:
        """Run every call at once; returns their results by name.

        Raises:
            The first call's exception (in `calls` order) once every call has finished, so no
            bus is left mid-transaction.
        """
        if len(calls) == 1:
            ((name, call),) = calls.items()
            return {name: call()}
        futures: dict[str, Future[T]] = {name: self._executor.submit(call) for name, call in calls.items()}
        results: dict[str, T] = {}
        error: BaseException | None = None
        for name, future in futures.items():
            try:
                results[name] = future.result()
            except BaseException as e:
                error = error or e
        if error is not None:
            raise error
        return results

    def close(self) -> None:
        """Stop the workers."""
        self._executor.shutdown(wait=True)
