"""Callables a test names in a checkpoint's processor JSON, to learn whether loading called them.

Each writes a line to the file its `record_path` argument names when it is called, so a test reads
that file to tell "refused before it ran" from "ran". `RecordingStep` is a working pass-through
processor step (a trusted class loads and runs); `record_call` is a plain function, the shape of
`os.system` in a hostile file.

    {"class": "policies.testing.sentinel_step.RecordingStep", "config": {"record_path": "/tmp/ran"}}
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lerobot.processor import ProcessorStep

RECORDING_STEP = f"{__name__}.RecordingStep"  # the `class` value that names RecordingStep
RECORD_CALL = f"{__name__}.record_call"  # the `class` value that names record_call


def _record(record_path: str, what: str) -> None:
    with Path(record_path).open("a") as record:
        record.write(f"{what}\n")


def record_call(record_path: str, **_: Any) -> None:
    """A function LeRobot would call as if it were a step class; records that it ran."""
    _record(record_path, "record_call")


@dataclass
class RecordingStep(ProcessorStep):
    """A processor step that records its construction and passes transitions through unchanged."""

    record_path: str = ""  # file that gets one line per construction

    def __post_init__(self) -> None:
        _record(self.record_path, "RecordingStep")

    def __call__(self, transition: Any) -> Any:
        """The transition, unchanged."""
        return transition

    def transform_features(self, features: Any) -> Any:
        """The features, unchanged."""
        return features

    def get_config(self) -> dict[str, Any]:
        """What LeRobot saves for this step."""
        return {"record_path": self.record_path}
