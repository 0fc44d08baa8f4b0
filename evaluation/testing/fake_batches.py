"""Message Batches state of the loopback API: a batch, its status body and its results (JSONL lines)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any


@dataclass
class FakeBatch:
    """A submitted batch."""

    id: str  # "msgbatch_fake_..."
    requests: list[dict[str, Any]]  # [{"custom_id", "params"}]
    created_at: datetime  # wall clock (API field)
    polls: int = 0  # status requests so far
    results: list[dict[str, Any]] | None = None  # set when the batch ends


def batch_json(batch: FakeBatch, results_url: str) -> dict[str, Any]:
    """The MessageBatch body: in_progress until results exist, then ended with a results_url."""
    ended = batch.results is not None
    counts = {"processing": 0 if ended else len(batch.requests), "succeeded": 0, "errored": 0, "canceled": 0,
              "expired": 0}  # fmt: skip
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
    batch: FakeBatch, answer: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]], request_id: Callable[[], str]
) -> list[dict[str, Any]]:
    """One result line per request: a 200 answer succeeds, an error answer is `errored`."""
    results = []
    for item in batch.requests:
        status, payload = answer(item["params"])
        if status == 200:
            result = {"type": "succeeded", "message": payload}
        else:
            result = {"type": "errored", "error": {**payload, "request_id": request_id()}}
        results.append({"custom_id": item["custom_id"], "result": result})
    return results
