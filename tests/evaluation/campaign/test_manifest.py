"""campaign.json: a round trip, an atomic write, and one-line errors for a foreign or corrupt file."""

import json
from pathlib import Path

import pytest

from evaluation.campaign.errors import CampaignError, ManifestError
from evaluation.campaign.identity import checkpoint_identity
from evaluation.campaign.manifest import CampaignPolicy, Manifest, Status, read_manifest, write_manifest
from evaluation.campaign.order import plan_rounds


def _manifest() -> Manifest:
    return Manifest(
        name="fold",
        seed=11,
        rubric="cloth_fold@0123456789ab",
        criteria=("R1", "R2", "R3"),
        policies=(
            CampaignPolicy("A", "policy_A", "/ckpt/smolvla", "sha256:aa"),
            CampaignPolicy("B", "policy_B", "/ckpt/act", "sha256:bb"),
        ),
        rounds=plan_rounds(("A", "B"), 6, 1, 11),
        episodes_per_policy=6,
        block=1,
        stop_when_significant=True,
        min_episodes_per_policy=4,
        adjust_for_looks=True,
        episodes_done={"A": 2, "B": 1},
        looks=({"round": 0, "verdict": "continue"},),
    )


def test_round_trip(tmp_path):
    manifest = _manifest()
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) == manifest
    finished = manifest.with_progress(status=Status.FINISHED, outcome="stop: maximum reached")
    write_manifest(tmp_path, finished)
    assert read_manifest(tmp_path).status == Status.FINISHED
    assert [p.name for p in tmp_path.iterdir()] == ["campaign.json"]  # no temporary file left behind


def test_a_missing_manifest_says_how_to_start(tmp_path):
    with pytest.raises(ManifestError, match=r"does not exist. Next: start the campaign with --policies"):
        read_manifest(tmp_path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"format": "other-tool", "version": 1}', "is not a so101-campaign manifest"),
        ("[1, 2]", "is not a so101-campaign manifest"),
        ('{"format": "so101-campaign", "version": 99}', "has version 99"),
        ('{"format": "so101-campaign", "version": 1, "name": "x"}', "is corrupt"),
        ('{"format": "so101-campaign", "vers', "is corrupt"),
    ],
)
def test_a_foreign_or_corrupt_manifest_is_one_line_with_the_next_step(tmp_path, text, expected):
    (tmp_path / "campaign.json").write_text(text)
    with pytest.raises(ManifestError) as raised:
        read_manifest(tmp_path)
    message = str(raised.value)
    assert expected in message
    assert "Next:" in message
    assert "\n" not in message


def test_a_plan_naming_an_unknown_label_is_corrupt(tmp_path):
    raw = _manifest().to_dict()
    raw["rounds"][0][0][0] = "Z"
    (tmp_path / "campaign.json").write_text(json.dumps(raw))
    with pytest.raises(ManifestError, match="is corrupt"):
        read_manifest(tmp_path)


def test_checkpoint_identity_follows_content_not_time(tmp_path: Path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(b"weights")
    (ckpt / "config.json").write_text("{}")
    first = checkpoint_identity(ckpt)
    (ckpt / "config.json").write_text("{}")  # rewritten, same bytes
    assert checkpoint_identity(ckpt) == first
    (ckpt / "model.safetensors").write_bytes(b"retrained")
    assert checkpoint_identity(ckpt) != first
    with pytest.raises(CampaignError, match="is not a folder"):
        checkpoint_identity(tmp_path / "nothing")


def test_the_report_finds_the_campaign_of_its_datasets(tmp_path):
    from evaluation.report.campaign import campaign_root

    write_manifest(tmp_path / "fold", _manifest())
    datasets = [tmp_path / "fold" / "policy_A", tmp_path / "fold" / "policy_B"]
    assert campaign_root(None, datasets) == (tmp_path / "fold").resolve()
    assert campaign_root(None, [tmp_path / "elsewhere" / "x", *datasets]) is None
    assert campaign_root(tmp_path / "given", []) == tmp_path / "given"
