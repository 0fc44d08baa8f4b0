"""One timed predictor call with errors made into the policy layer's own."""

import time

import numpy as np

from policies.engine import ChunkPredictor, PolicyInput
from policies.errors import InferenceError, PolicyError


def call_predictor(
    predictor: ChunkPredictor,
    inputs: PolicyInput,
    chunk_id: int,
    *,
    inference_delay: int = 0,
    leftover: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """The chunk and how long it took (seconds). Blocks for the predictor's latency.

    Raises:
        PolicyError: the predictor's own errors unchanged (NonFiniteActionError among them); any
            other exception as an InferenceError naming the chunk.
    """
    start = time.monotonic()
    try:
        if inference_delay or leftover is not None:
            chunk = predictor.predict_chunk(inputs, inference_delay=inference_delay, leftover=leftover)
        else:
            chunk = predictor.predict_chunk(inputs)
    except PolicyError:
        raise
    except Exception as e:
        raise InferenceError(
            f"the policy failed computing chunk {chunk_id}: {type(e).__name__}: {e}. "
            "Check the checkpoint and its processor files (the cause is chained below this error)."
        ) from e
    return np.asarray(chunk), time.monotonic() - start
