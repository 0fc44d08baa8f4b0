"""Message Batches state of the loopback API: batches, scripted create/list faults, status bodies, results.

    POST /v1/messages/batches               create (a scripted CreateFault may lose the reply or fail)
    GET  /v1/messages/batches               list, newest first, paged by after_id / before_id / limit
    GET  /v1/messages/batches/{id}          in_progress for the server's `batch_polls_before_end` polls
    GET  /v1/messages/batches/{id}/results  JSONL: succeeded, errored (scripted HttpError), expired or
                                            canceled (scripted ItemOutcome)

`BatchBook` holds the batches (thread-safe); the server turns its answers into HTTP.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from evaluation.testing.fake_api_script import HttpError

ITEM_OUTCOMES = ("expired", "canceled")
MAX_LIST_LIMIT = 1000  # the API's largest page


@dataclass(frozen=True)
class CreateFault:
    """How the next batch create is answered: the batch is made (or not), then a late reply or an error."""

    created: bool = True  # whether the batch exists afterwards (listing and retrieving find it)
    delay_s: float = 0.0  # wait before answering; longer than the client's timeout, the reply is lost
    error: HttpError | None = None  # answer this error instead of the batch


@dataclass(frozen=True)
class ItemOutcome:
    """A batch item that ends without a reply (scripted per episode, like an answer)."""

    type: str = "expired"  # "expired" or "canceled"

    def __post_init__(self) -> None:
        """Refuse an outcome the API does not have."""
        if self.type not in ITEM_OUTCOMES:
            raise ValueError(f"ItemOutcome type {self.type!r}; allowed: {ITEM_OUTCOMES}")


@dataclass
class FakeBatch:
    """A submitted batch."""

    id: str  # "msgbatch_fake_..."
    requests: list[dict[str, Any]]  # [{"custom_id", "params"}]
    created_at: datetime  # wall clock (API field)
    polls: int = 0  # status requests so far
    results: list[dict[str, Any]] | None = None  # set when the batch ends


@dataclass
class BatchBook:
    """The batches of one fake server, in creation order, and the scripted create and list faults."""

    _batches: dict[str, FakeBatch] = field(default_factory=dict)
    _create_faults: deque = field(default_factory=deque)
    _list_faults: deque = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script_create(self, *faults: CreateFault) -> None:
        """Queue how the next creates are answered (then: made and answered at once)."""
        with self._lock:
            self._create_faults.extend(faults)

    def script_list(self, *errors: HttpError) -> None:
        """Queue errors for the next list requests (then: answered)."""
        with self._lock:
            self._list_faults.extend(errors)

    def all(self) -> list[FakeBatch]:
        """Every batch made so far, oldest first."""
        with self._lock:
            return list(self._batches.values())

    def get(self, batch_id: str) -> FakeBatch | None:
        """A batch by id."""
        with self._lock:
            return self._batches.get(batch_id)

    def next_create_fault(self) -> CreateFault:
        """The scripted answer of this create (default: made, answered at once)."""
        with self._lock:
            return self._create_faults.popleft() if self._create_faults else CreateFault()

    def next_list_fault(self) -> HttpError | None:
        """The scripted error of this list request, if any."""
        with self._lock:
            return self._list_faults.popleft() if self._list_faults else None

    def add(self, batch_id: str, requests: list[dict[str, Any]]) -> FakeBatch:
        """Make a batch."""
        batch = FakeBatch(batch_id, list(requests), datetime.now(UTC))
        with self._lock:
            self._batches[batch.id] = batch
        return batch

    def poll(self, batch: FakeBatch, polls_before_end: int) -> bool:
        """Count a status poll; True when this poll ends the batch (its results must be made now).

        The first `polls_before_end` polls of a batch report it in progress.
        """
        with self._lock:
            batch.polls += 1
            return batch.results is None and batch.polls > polls_before_end

    def page(self, params: dict[str, str], results_url: Callable[[str], str]) -> dict[str, Any]:
        """The list body: newest first, `limit` per page, after `after_id` or before `before_id`."""
        with self._lock:
            newest_first = list(reversed(self._batches.values()))
        ids = [b.id for b in newest_first]
        limit = max(1, min(int(params.get("limit", 20)), MAX_LIST_LIMIT))
        if params.get("after_id") in ids:
            start = ids.index(params["after_id"]) + 1
            chosen, more = newest_first[start : start + limit], start + limit < len(ids)
        elif params.get("before_id") in ids:
            end = ids.index(params["before_id"])
            start = max(0, end - limit)
            chosen, more = newest_first[start:end], start > 0
        else:
            chosen, more = newest_first[:limit], limit < len(ids)
        return {
            "data": [batch_json(b, results_url(b.id)) for b in chosen],
            "has_more": more,
            "first_id": chosen[0].id if chosen else None,
            "last_id": chosen[-1].id if chosen else None,
        }


def batch_json(batch: FakeBatch, results_url: str) -> dict[str, Any]:
    """The MessageBatch body: in_progress until results exist, then ended with a results_url."""
    ended = batch.results is not None
    counts = {
        "processing": 0 if ended else len(batch.requests),
        "succeeded": 0,
        "errored": 0,
        "canceled": 0,
        "expired": 0,
    }
    for r in batch.results or []:
        counts[r["result"]["type"]] += 1
    return {
        "id": batch.id,
        "type": "message_batch",
        "processing_status": "ended" if ended else "in_progress",
        "request_counts": counts,
        "created_at": batch.created_at.isoformat(),
        "expires_at": (batch.created_at + timedelta(hours=24)).isoformat(),
        "ended_at": datetime.now(UTC).isoformat() if ended else None,
        "archived_at": None,
        "cancel_initiated_at": None,
        "results_url": results_url if ended else None,
    }


def batch_results(
    batch: FakeBatch,
    draw: Callable[[dict[str, Any]], object],
    answer: Callable[[dict[str, Any], object], tuple[int, dict[str, Any]]],
    request_id: Callable[[], str],
) -> list[dict[str, Any]]:
    """One result line per request: the scripted action `draw` gives, answered by `answer`.

    An ItemOutcome ends the item as expired or canceled; a 200 answer succeeds; an error answer is `errored`.
    """
    results = []
    for item in batch.requests:
        action = draw(item["params"])
        if isinstance(action, ItemOutcome):
            result: dict[str, Any] = {"type": action.type}
        else:
            status, payload = answer(item["params"], action)
            if status == 200:
                result = {"type": "succeeded", "message": payload}
            else:
                result = {"type": "errored", "error": {**payload, "request_id": request_id()}}
        results.append({"custom_id": item["custom_id"], "result": result})
    return results
