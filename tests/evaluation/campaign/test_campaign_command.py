"""so101-campaign end to end through its entry point, with a fake so101-deploy below the subprocess seam.

The double (evaluation/testing/fake_deploy.py, given as --deploy.program) checks the flags a block
needs, records "episodes" and writes the operator's live scores with teleop's writer; the campaign
runs it exactly as it would run so101-deploy. Then so101-report --campaign.root reveals the mapping.
"""

import json
import shlex
import sys
from collections import Counter
from pathlib import Path

import pytest

from evaluation.commands.campaign import main
from evaluation.commands.report import main as report_main
from evaluation.testing import fake_deploy
from evaluation.testing.fake_deploy import CALLS_FILE, POLICY_FILE
from robot.shell.exit_codes import Exit

ROOT = Path(__file__).resolve().parents[3]
FAKE = shlex.join([sys.executable, fake_deploy.__file__])
RIG = ROOT / "hardware_configs" / "virtual.yaml"


@pytest.fixture
def checkpoints(tmp_path, monkeypatch) -> dict[str, Path]:
    for name in ("FAKE_DEPLOY_FAIL_AT_CALL", "FAKE_DEPLOY_QUIT_AT_CALL"):
        monkeypatch.delenv(name, raising=False)
    out = {}
    for name, quality in (("good", 0.9), ("poor", 0.15)):
        folder = tmp_path / f"SECRET_{name}_checkpoint" / "pretrained_model"
        folder.mkdir(parents=True)
        (folder / POLICY_FILE).write_text(json.dumps({"quality": quality}))
        (folder / "model.safetensors").write_bytes(name.encode())
        out[name] = folder
    return out


def _args(checkpoints: dict[str, Path], root: Path, *extra: str) -> list[str]:
    return [
        f"--policies=[{checkpoints['good']},{checkpoints['poor']}]",
        f"--campaign.root={root}",
        "--live_scores.operator=ana",
        f"--deploy.program={FAKE}",
        f"--deploy.config_path={RIG}",
        "--deploy.session.episode_s=5",
        "--deploy.engine.kind=sync",
        *extra,
    ]


def _calls(root: Path) -> list[dict[str, str]]:
    lines = (root / CALLS_FILE).read_text().splitlines()
    return [dict(a.removeprefix("--").split("=", 1) for a in json.loads(line)) for line in lines]


def _assert_blind(text: str, checkpoints: dict[str, Path]) -> None:
    assert "SECRET" not in text
    for folder in checkpoints.values():
        assert str(folder) not in text


def test_eight_episodes_each_balanced_blind_then_revealed(checkpoints, tmp_path, capfd):
    root = tmp_path / "fold_campaign"
    code = main(_args(checkpoints, root, "--campaign.episodes_per_policy=8", "--campaign.seed=5"))
    out = capfd.readouterr()
    assert code == Exit.DONE, out
    _assert_blind(out.out + out.err, checkpoints)
    assert "campaign finished (done: every planned episode)" in out.out

    manifest = json.loads((root / "campaign.json").read_text())
    mapping = {p["label"]: p["checkpoint"] for p in manifest["policies"]}
    assert sorted(mapping.values()) == sorted(str(c) for c in checkpoints.values())
    calls = _calls(root)
    assert len(calls) == 16  # blocks of one episode
    labels = [c["policy.blind_label"] for c in calls]
    assert Counter(labels) == {"A": 8, "B": 8}
    for end in range(4, 17, 4):  # every whole round (ABBA or BAAB) leaves the counts equal
        assert labels[:end].count("A") == labels[:end].count("B")
        assert "".join(labels[end - 4 : end]) in ("ABBA", "BAAB")
    seen = set()
    for call in calls:
        label = call["policy.blind_label"]
        assert call["policy.path"] == mapping[label]
        assert call["dataset.root"] == str(root / f"policy_{label}")
        assert call["dataset.repo_id"] == f"local/fold_campaign_policy_{label}"
        assert call.get("dataset.resume") == ("true" if label in seen else None)
        seen.add(label)
        assert call["session.num_episodes"] == "1"
        assert call["live_scores.enabled"] == "true"
        assert call["live_scores.operator"] == "ana"
        assert call["live_scores.criteria"] == "[R1,R2,R3]"
        assert call["config_path"] == str(RIG)
        assert call["session.episode_s"] == "5.0"
        assert call["engine.kind"] == "sync"

    out_dir = tmp_path / "report"
    assert report_main([f"--campaign.root={root}", f"--output_dir={out_dir}"]) == 0
    text = " ".join(capfd.readouterr().out.split())
    for label, checkpoint in mapping.items():
        assert f"policy {label} = {checkpoint}" in text
    assert "policy A − policy B:" in text
    assert "(95 % Welch)" in text
    reveal = json.loads((out_dir / "campaign_reveal.json").read_text())
    difference = reveal["differences"][0]["difference"]
    assert difference["method"] == "welch"
    assert difference["low"] < difference["value"] < difference["high"]
    good = next(label for label, path in mapping.items() if "good" in path)
    assert (difference["value"] > 0) == (good == "A")  # the better checkpoint is ahead
    assert [p["episodes"] for p in reveal["policies"]] == [8, 8]


def test_the_rule_stops_a_clear_difference_early(checkpoints, tmp_path, capfd):
    root = tmp_path / "c"
    args = ["--campaign.stop_when_significant=true", "--campaign.max_episodes_per_policy=12", "--campaign.seed=2"]
    assert main(_args(checkpoints, root, *args)) == Exit.DONE
    out = capfd.readouterr().out
    _assert_blind(out, checkpoints)
    assert "campaign finished (stop: interval excludes 0)" in out
    manifest = json.loads((root / "campaign.json").read_text())
    done = manifest["episodes_done"]
    assert done["A"] == done["B"] >= 4
    assert done["A"] < 12
    assert manifest["looks"][-1]["verdict"] == "stop: interval excludes 0"
    assert main(_args(checkpoints, root, *args)) == Exit.DONE  # run again: nothing to do
    assert "is finished" in capfd.readouterr().out


def test_a_campaign_scored_by_truth_runs_unattended_and_stops_with_the_better_policy_ahead(
    checkpoints, tmp_path, capfd
):
    root = tmp_path / "truth"
    args = ["--campaign.scorer=truth", "--campaign.stop_when_significant=true", "--campaign.max_episodes_per_policy=12"]
    argv = [a for a in _args(checkpoints, root, *args, "--campaign.seed=4") if not a.startswith("--live_scores")]
    assert main(argv) == Exit.DONE
    out = capfd.readouterr().out
    _assert_blind(out, checkpoints)
    assert "campaign finished (stop: interval excludes 0)" in out
    assert all(not any(k.startswith("live_scores") for k in call) for call in _calls(root))  # nobody at the keys
    manifest = json.loads((root / "campaign.json").read_text())
    assert manifest["scorer"] == "truth"
    assert manifest["episodes_done"]["A"] < 12
    out_dir = tmp_path / "report"
    assert report_main([f"--campaign.root={root}", f"--output_dir={out_dir}"]) == 0
    reveal = json.loads((out_dir / "campaign_reveal.json").read_text())
    difference = reveal["differences"][0]["difference"]
    good = next(p["label"] for p in manifest["policies"] if "good" in p["checkpoint"])
    assert (difference["low"] > 0) == (good == "A")  # the better one ahead, the interval clear of 0
    assert (difference["high"] < 0) == (good == "B")
    # Truth totals are continuous: the cards' sums, not the rubric's levels.
    assert reveal["scored_by"] == "virtual ground truth"
    totals = [p["total"]["value"] for p in reveal["policies"]]
    assert any(round(t * 2) != t * 2 for t in totals), totals
    # Resuming it scored live instead would mix two scorers: refused.
    capfd.readouterr()
    assert main(_args(checkpoints, root, "--campaign.scorer=live")) == Exit.USAGE
    assert "--campaign.scorer differ" in " ".join(capfd.readouterr().err.split())


def test_a_failed_deploy_is_one_line_and_the_printed_command_resumes_in_the_same_order(
    checkpoints, tmp_path, capfd, monkeypatch
):
    root = tmp_path / "c"
    monkeypatch.setenv("FAKE_DEPLOY_FAIL_AT_CALL", "3")
    assert main(_args(checkpoints, root, "--campaign.episodes_per_policy=4", "--campaign.seed=9")) == Exit.FAILED
    out = capfd.readouterr()
    _assert_blind(out.out + out.err, checkpoints)
    line = [x for x in out.err.splitlines() if x.startswith("error:")][-1]  # the deploy's own line comes first
    assert "so101-deploy exited with 1 during a block" in line
    resume = shlex.split(line.split("resume: ", 1)[1])
    assert resume[0] == "so101-campaign"
    monkeypatch.delenv("FAKE_DEPLOY_FAIL_AT_CALL")
    assert main(resume[1:]) == Exit.DONE
    assert "resuming campaign c" in capfd.readouterr().out
    labels = [c["policy.blind_label"] for c in _calls(root)]
    del labels[2]  # the failed call saved nothing; the same block ran again
    manifest = json.loads((root / "campaign.json").read_text())
    assert labels == [b[0] for r in manifest["rounds"] for b in r]
    assert manifest["episodes_done"] == {"A": 4, "B": 4}


def test_an_operator_who_quits_a_block_pauses_the_campaign(checkpoints, tmp_path, capfd, monkeypatch):
    root = tmp_path / "c"
    monkeypatch.setenv("FAKE_DEPLOY_QUIT_AT_CALL", "2")
    assert main(_args(checkpoints, root, "--campaign.episodes_per_policy=2")) == Exit.DONE
    out = capfd.readouterr().out
    assert "paused: policy" in out
    assert "Resume with: so101-campaign" in out
    _assert_blind(out, checkpoints)


def test_a_changed_checkpoint_is_refused_on_resume_without_naming_it(checkpoints, tmp_path, capfd, monkeypatch):
    root = tmp_path / "c"
    monkeypatch.setenv("FAKE_DEPLOY_QUIT_AT_CALL", "2")
    main(_args(checkpoints, root, "--campaign.episodes_per_policy=2"))
    capfd.readouterr()
    (checkpoints["good"] / "model.safetensors").write_bytes(b"retrained")
    assert main([f"--campaign.root={root}", "--live_scores.operator=ana", f"--deploy.program={FAKE}"]) == Exit.FAILED
    captured = capfd.readouterr()
    assert "checkpoint has changed" in captured.err
    _assert_blind(captured.out + captured.err, checkpoints)


def test_options_that_disagree_with_the_stored_campaign_are_refused(checkpoints, tmp_path, capfd, monkeypatch):
    root = tmp_path / "c"
    monkeypatch.setenv("FAKE_DEPLOY_QUIT_AT_CALL", "1")
    main(_args(checkpoints, root, "--campaign.episodes_per_policy=2"))
    capfd.readouterr()
    assert main(_args(checkpoints, root, "--campaign.episodes_per_policy=6")) == Exit.USAGE
    assert "--campaign.episodes_per_policy differ" in " ".join(capfd.readouterr().err.split())


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--live_scores.operator=ana"], "campaign.root is required"),
        (["--campaign.root=x"], "live_scores.operator is empty"),
        (["--campaign.root={tmp}/new", "--live_scores.operator=ana"], "holds no campaign.json"),
        (
            [
                "--campaign.root=x",
                "--live_scores.operator=ana",
                "--policies=[a,b,c]",
                "--campaign.stop_when_significant=true",
            ],
            "compares two policies",
        ),
        (
            ["--campaign.root=x", "--live_scores.operator=ana", "--campaign.max_episodes_per_policy=9"],
            "applies with the stopping rule only",
        ),
        (["--campaign.root=x", "--live_scores.operator=ana", "--deploy.engine.kind=remote"], "deploy.engine.kind"),
        (
            [
                "--campaign.root=x",
                "--campaign.scorer=truth",
                f"--deploy.config_path={ROOT}/hardware_configs/so101_bimanual.yaml",
            ],
            "campaign.scorer=truth needs the virtual rig",
        ),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args, expected, tmp_path, capsys):
    _refused(main([a.replace("{tmp}", str(tmp_path)) for a in args]), Exit.USAGE, expected, capsys)


def test_a_checkpoint_that_is_not_a_folder_fails_in_one_line(tmp_path, capsys):
    args = [
        f"--campaign.root={tmp_path}/new",
        "--live_scores.operator=ana",
        f"--policies=[{tmp_path}/no,{tmp_path}/nope]",
    ]
    _refused(main(args), Exit.FAILED, "is not a folder", capsys)


def _refused(code: int, expected_code: int, expected: str, capsys) -> None:
    assert code == expected_code
    captured = capsys.readouterr()
    assert captured.out == ""
    out = " ".join(captured.err.split())
    assert out.startswith("error:"), out
    assert expected in out, out


def test_three_policies_run_mirrored_rounds_and_the_reveal_compares_every_pair(checkpoints, tmp_path, capfd):
    third = tmp_path / "SECRET_third" / "pretrained_model"
    third.mkdir(parents=True)
    (third / POLICY_FILE).write_text(json.dumps({"quality": 0.5}))
    root = tmp_path / "c3"
    args = [
        f"--policies=[{checkpoints['good']},{checkpoints['poor']},{third}]",
        f"--campaign.root={root}",
        "--live_scores.operator=ana",
        f"--deploy.program={FAKE}",
        "--campaign.episodes_per_policy=4",
    ]
    assert main(args) == Exit.DONE
    _assert_blind(capfd.readouterr().out, {**checkpoints, "third": third})
    labels = [c["policy.blind_label"] for c in _calls(root)]
    assert Counter(labels) == {"A": 4, "B": 4, "C": 4}
    assert labels[:3] == labels[3:6][::-1]  # a round is a Latin-square row, then its mirror
    assert report_main([f"--campaign.root={root}", f"--output_dir={tmp_path / 'r'}"]) == 0
    text = " ".join(capfd.readouterr().out.split())
    for pair in ("policy A − policy B", "policy A − policy C", "policy B − policy C"):
        assert pair in text
