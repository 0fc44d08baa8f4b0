"""Virtual rig files (YAML) for the end-to-end tests: pre-calibrated, instant timing, small cameras."""

from pathlib import Path

import yaml

CAMERAS = ("left_wrist", "right_wrist", "overhead")
# A busy 2-core machine can delay a synthetic camera's render thread past the default 0.25 s stale
# bound and end a recording; stale detection itself is tested in tests/robot (cameras/ among it).
RELAXED_CAPTURE = {"max_frame_age_s": 1.0}


def rig_yaml(folder: Path) -> Path:
    """A virtual rig living under `folder`, pre-calibrated, with small cameras (the replay tests' rig)."""
    cameras = [{"kind": "virtual", "name": name, "view": name, "width": 128, "height": 96,
                "phase_s": 0.003 * (i + 1), "seed": i, "capture": RELAXED_CAPTURE}
               for i, name in enumerate(CAMERAS)]  # fmt: skip
    rig = {
        "id": "replay_rig",
        "calibration": {"dir": str(folder / "calibration")},
        "bus": {"reply_timeout_ms": 20.0, "read_deadline_ms": 50.0},
        "cameras": cameras,
        "virtual": {"runtime_dir": str(folder / "run"), "timing": "instant", "calibrated": True},
    }
    path = folder / "rig.yaml"
    path.write_text(yaml.safe_dump(rig))
    return path
