"""A stand-in for so101-deploy in campaign tests: records "episodes" and their scores, no rig.

    python evaluation/testing/fake_deploy.py --policy.path=<ckpt> --policy.blind_label=A \
        --dataset.root=<campaign>/policy_A --dataset.repo_id=local/x_policy_A --session.num_episodes=2 \
        --live_scores.enabled=true --live_scores.operator=ana --live_scores.criteria=[R1,R2,R3]

It sits below the subprocess seam so101-campaign runs every block through (`--deploy.program`), and
checks what so101-deploy would: the flags a block needs, `--dataset.resume=true` exactly when the
folder holds a dataset. Per episode it bumps meta/info.json's total_episodes and writes a live score
as teleop/dataset/live_scores.py does (it imports nothing of the product, so it starts in ~50 ms).
Scores come from `<checkpoint>/fake_policy.json` ({"quality": 0..1}: each criterion is drawn around
it, seeded by quality, label, episode and criterion, so runs repeat). Without the --live_scores flags
(a campaign scored by truth) each episode gets a quality card with the virtual rig's "truth" instead:
R1-R3 continuous, drawn the same way.
Every call is appended to `<campaign>/fake_deploy_calls.jsonl`. FAKE_DEPLOY_FAIL_AT_CALL=n makes the
n-th call exit 1 having saved nothing; FAKE_DEPLOY_QUIT_AT_CALL=n makes it exit 0 having saved
nothing (as if the operator pressed q). It prints only "policy <label>", never the checkpoint.
"""

from __future__ import annotations

import json
import os
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

CALLS_FILE = "fake_deploy_calls.jsonl"
POLICY_FILE = "fake_policy.json"
_NEEDED = (
    "policy.path",
    "policy.blind_label",
    "dataset.root",
    "dataset.repo_id",
    "session.num_episodes",
)
_LIVE = ("live_scores.enabled", "live_scores.operator", "live_scores.criteria")  # all or none
TRUTH_CRITERIA = ("R1", "R2", "R3")


def main(argv: list[str]) -> int:
    """Record the asked episodes with scores; returns the exit code so101-deploy would."""
    args = dict(a.removeprefix("--").split("=", 1) for a in argv)
    live = any(k in args for k in _LIVE)
    missing = [k for k in (*_NEEDED, *(_LIVE if live else ())) if k not in args]
    if missing:
        sys.stderr.write(f"error: missing {missing}\n")
        return 2
    root = Path(args["dataset.root"])
    info = root / "meta" / "info.json"
    if info.exists() != (args.get("dataset.resume") == "true"):
        resume = args.get("dataset.resume")
        sys.stderr.write(f"error: --dataset.resume={resume}, and {root} holds a dataset: {info.exists()}\n")
        return 2
    calls = root.parent / CALLS_FILE
    number = 1 + (len(calls.read_text().splitlines()) if calls.exists() else 0)
    with calls.open("a") as f:
        f.write(json.dumps(argv) + "\n")
    if str(number) == os.environ.get("FAKE_DEPLOY_FAIL_AT_CALL"):
        sys.stderr.write("error: the rig is not there (fake)\n")
        return 1
    if str(number) == os.environ.get("FAKE_DEPLOY_QUIT_AT_CALL"):
        return 0
    quality = float(json.loads((Path(args["policy.path"]) / POLICY_FILE).read_text())["quality"])
    label = args["policy.blind_label"]
    done = json.loads(info.read_text())["total_episodes"] if info.exists() else 0
    for index in range(done, done + int(args["session.num_episodes"])):
        if live:
            scores = {c: _score(quality, label, index, c) for c in args["live_scores.criteria"].strip("[]").split(",")}
            _write_score(root, index, args["live_scores.operator"], scores)
        else:
            _write_truth(root, index, {c: _truth(quality, label, index, c) for c in TRUTH_CRITERIA})
        info.parent.mkdir(parents=True, exist_ok=True)
        info.write_text(json.dumps({"codebase_version": "v3.0", "total_episodes": index + 1}))
        sys.stdout.write(f"policy {label}: episode {index} saved and scored\n")
    return 0


def _write_score(root: Path, index: int, operator: str, scores: dict[str, float]) -> None:
    """The file teleop/dataset/live_scores.py writes (written here so the double starts fast: no numpy).

    The campaign reads it with that module's strict reader, so a drift of this copy fails the tests.
    """
    path = root / "meta" / "so101" / "live_scores" / f"episode-{index:06d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    scored_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    doc = {
        "schema": 1,
        "episode_index": index,
        "operator": operator,
        "scored_at": scored_at,
        "skipped": False,
        "scores": scores,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")


def _write_truth(root: Path, index: int, scores: dict[str, float]) -> None:
    """The quality card's "truth" as the virtual rig saves it (read back by evaluation/truth.py's checks)."""
    path = root / "meta" / "so101" / "episodes" / f"episode-{index:06d}" / "quality.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"episode": index, "truth": {"definition": "cloth_truth@2", "scores": scores}}))


def _truth(quality: float, label: str, index: int, criterion: str) -> float:
    x = quality + random.Random(f"truth:{quality}:{label}:{index}:{criterion}").uniform(-0.25, 0.25)
    return round(min(1.0, max(0.0, x)), 4)


def _score(quality: float, label: str, index: int, criterion: str) -> float:
    x = quality + random.Random(f"{quality}:{label}:{index}:{criterion}").uniform(-0.35, 0.35)
    return 0.0 if x < 1 / 3 else 0.5 if x < 2 / 3 else 1.0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
