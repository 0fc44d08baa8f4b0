"""The blend of overlapping chunks and the queue's alignment: exact values."""

import numpy as np
import pytest

from policies.engines.blend import BlendMode, blend_overlap, crossfade_weights
from policies.engines.chunk_queue import ChunkQueue, validate_chunk
from policies.errors import InferenceError, NonFiniteActionError


def test_crossfade_weights_are_linear_and_exclude_both_ends():
    assert crossfade_weights(4).tolist() == pytest.approx([0.2, 0.4, 0.6, 0.8])
    assert crossfade_weights(1).tolist() == [0.5]
    assert crossfade_weights(0).tolist() == []


def test_crossfade_over_the_whole_overlap_exact_values():
    old = np.zeros((4, 2), dtype=np.float32)
    new = np.full((6, 2), 10.0, dtype=np.float32)
    merged = blend_overlap(old, new, BlendMode.CROSSFADE)
    assert merged[:, 0].tolist() == pytest.approx([2.0, 4.0, 6.0, 8.0, 10.0, 10.0])
    assert merged.dtype == np.float32


def test_crossfade_limited_to_blend_steps():
    old = np.zeros((5, 1), dtype=np.float32)
    new = np.array([[10.0], [20.0], [30.0], [40.0], [50.0], [60.0]], dtype=np.float32)
    merged = blend_overlap(old, new, BlendMode.CROSSFADE, blend_steps=2)
    # w = 1/3, 2/3 over the first two ticks; the old tail beyond them is dropped
    assert merged[:, 0].tolist() == pytest.approx([10 / 3, 40 / 3, 30.0, 40.0, 50.0, 60.0])


def test_old_actions_beyond_the_new_chunk_are_dropped():
    old = np.full((5, 1), 1.0, dtype=np.float32)
    new = np.full((2, 1), 4.0, dtype=np.float32)
    assert blend_overlap(old, new)[:, 0].tolist() == pytest.approx([2.0, 3.0])


def test_replace_and_nothing_queued_take_the_new_chunk_as_is():
    new = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert np.array_equal(blend_overlap(np.ones((3, 2)), new, BlendMode.REPLACE), new)
    assert np.array_equal(blend_overlap(np.zeros((0, 2)), new), new)


def chunk(value: float, n: int = 10) -> np.ndarray:
    return np.full((n, 12), value, dtype=np.float32) + np.arange(n, dtype=np.float32)[:, None]


def test_merge_skips_the_actions_executed_meanwhile_and_blends_the_rest():
    queue = ChunkQueue()
    queue.merge(chunk(0.0), chunk_id=0, latency_s=0.1, skip=0)
    for _ in range(6):
        queue.pop()  # six executed: four left (values 6..9)
    consumed_at_request = queue.consumed
    queue.pop()
    queue.pop()  # two more executed while the next chunk was computed: 8, 9 left
    queue.merge(chunk(100.0), chunk_id=1, latency_s=0.2, skip=queue.consumed - consumed_at_request)
    first, second, third = queue.pop(), queue.pop(), queue.pop()
    assert (first.chunk_id, first.index_in_chunk) == (1, 2)  # chunk 1's actions 0, 1 were for past ticks
    assert first.values[0] == pytest.approx(8 * 2 / 3 + 102 / 3)  # old 8, new 102, w = 1/3
    assert second.values[0] == pytest.approx(9 / 3 + 103 * 2 / 3)  # old 9, new 103, w = 2/3
    assert third.values[0] == pytest.approx(104.0)  # past the overlap: the new chunk alone
    assert third.chunk_latency_s == 0.2
    assert len(queue) == 10 - 2 - 3


def test_a_chunk_later_than_its_length_queues_nothing():
    queue = ChunkQueue()
    assert queue.merge(chunk(0.0, 4), chunk_id=0, latency_s=1.0, skip=9) == 0
    assert queue.pop() is None


def test_validate_chunk_names_the_bad_value_and_the_shape():
    bad = chunk(0.0)
    bad[3, 4] = np.inf
    with pytest.raises(NonFiniteActionError, match=r"chunk 7 .* action 3, left_wrist_roll\.pos"):
        validate_chunk(bad, 7)
    with pytest.raises(InferenceError, match=r"shape \(10, 6\)"):
        validate_chunk(np.zeros((10, 6)), 2)
