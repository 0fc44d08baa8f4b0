"""Virtual rig files (YAML) for the end-to-end tests: pre-calibrated, instant timing, small cameras."""

from pathlib import Path

import yaml

CAMERAS = ("left_wrist", "right_wrist", "overhead")
# The rig id of tests/robot's in-process arms (their calibration files are named after it).
IN_PROCESS_RIG_ID = "test_rig"
# A busy 2-core machine can delay a synthetic camera's render thread past the default 0.25 s stale
# bound and end a recording; stale detection itself is tested in tests/robot (cameras/ among it).
RELAXED_CAPTURE = {"max_frame_age_s": 1.0}


def rig_yaml(
    folder: Path, *, rig_id: str = "replay_rig", width: int = 128, height: int = 96, **overhead: object
) -> Path:
    """A virtual rig living under `folder`, pre-calibrated, with small cameras; `overhead`: more settings
    of the overhead camera (a fault: `drop_every`, `freeze_after_s`, ...)."""
    cameras = [
        {
            "kind": "virtual",
            "name": name,
            "view": name,
            "width": width,
            "height": height,
            "phase_s": 0.003 * (i + 1),
            "seed": i,
            "capture": RELAXED_CAPTURE,
        }
        | (overhead if name == "overhead" else {})
        for i, name in enumerate(CAMERAS)
    ]
    rig = {
        "id": rig_id,
        "calibration": {"dir": str(folder / "calibration")},
        "bus": {"reply_timeout_ms": 20.0, "read_deadline_ms": 50.0},
        "cameras": cameras,
        "virtual": {"runtime_dir": str(folder / "run"), "timing": "instant", "calibrated": True},
    }
    path = folder / "rig.yaml"
    path.write_text(yaml.safe_dump(rig))
    return path
