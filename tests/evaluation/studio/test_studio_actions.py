"""Each studio button's command line: the command a user types, checked fields, nothing else run."""

import json
import shlex
from pathlib import Path

import pytest

from evaluation.studio.actions import ACTIONS, ActionInputError, Place, command_for
from evaluation.studio.app import ESTOP_KEY, KEYS, doctor_rows
from evaluation.studio.jobs import Lane
from teleop.keys import Key, parse


def _dataset(place: Place, name: str) -> Path:
    root = place.dataset(name)
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text('{"total_episodes": 2, "features": {}}')
    return root


def test_record_is_so101_record_with_the_rig_the_workspace_and_the_form(tmp_path: Path):
    place = Place(tmp_path / "ws", tmp_path / "rig.yaml")
    fields = {"dataset": "fold", "task": "Fold  the cloth", "episodes": "2", "episode_s": "3", "reset_s": "0.5"}
    line, lane = command_for("record", fields | {"more": "--gates.min_fps=20"}, place)
    assert lane is Lane.RIG
    assert line.argv[0] == "so101-record"
    assert f"--config_path={tmp_path / 'rig.yaml'}" in line.argv
    assert f"--dataset.root={tmp_path / 'ws' / 'datasets' / 'fold'}" in line.argv
    assert "--dataset.repo_id=studio/fold" in line.argv
    assert "--session.task=Fold the cloth" in line.argv  # whitespace collapsed, one argument
    assert {"--session.num_episodes=2", "--session.episode_s=3", "--session.reset_s=0.5"} <= set(line.argv)
    assert line.argv[-1] == "--gates.min_fps=20"
    assert "--dataset.resume=true" not in line.argv
    assert tuple(shlex.split(line.shown)) == line.argv  # the shown line pastes into a shell as the same argv
    _dataset(place, "fold")
    again, _ = command_for("record", fields, place)
    assert "--dataset.resume=true" in again.argv  # an existing dataset gets episodes added, never replaced


def test_without_a_rig_file_the_commands_use_their_default_the_virtual_rig(tmp_path: Path):
    line, _ = command_for("doctor", {}, Place(tmp_path))
    assert line.argv == ("so101-doctor", "--json=true")


@pytest.mark.parametrize(
    ("action", "fields", "said"),
    [
        ("record", {"dataset": "../escape"}, "dataset='../escape'"),
        ("record", {"dataset": "a b"}, "expected a name"),
        ("record", {"dataset": "fold", "episodes": "0"}, "episodes=0"),
        ("record", {"dataset": "fold", "episodes": "2.5"}, "whole number"),
        ("record", {"dataset": "fold", "episode_s": "nan"}, "episode_s=nan"),
        ("record", {"dataset": "fold", "vcodec": "mjpeg"}, "vcodec='mjpeg'"),
        ("record", {"dataset": "fold", "more": "--config_path=/etc/x.yaml"}, "studio's to set"),
        ("record", {"dataset": "fold", "more": "rm -rf /"}, "not a --flag=value"),
        ("record", {"dataset": "fold", "more": "--task='open"}, "quote"),
        ("replay", {"dataset": "missing"}, "no dataset at"),
        ("deploy", {"dataset": "eval", "checkpoint": ""}, "checkpoint"),
        ("deploy", {"dataset": "eval", "checkpoint": "/no/such/folder"}, "no such folder"),
        ("judge", {"dataset": "missing"}, "no dataset at"),
        ("launch", {}, "no action 'launch'"),
    ],
)
def test_a_bad_field_is_refused_in_one_line_naming_it(tmp_path: Path, action: str, fields: dict, said: str):
    with pytest.raises(ActionInputError) as refused:
        command_for(action, fields, Place(tmp_path / "ws"))
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)


def test_replay_is_dry_and_offline_and_judge_estimates_before_it_scores(tmp_path: Path):
    place = Place(tmp_path / "ws", tmp_path / "rig.yaml")
    root = _dataset(place, "fold")
    replay, lane = command_for("replay", {"dataset": "fold", "episode": "1"}, place)
    assert lane is Lane.OFFLINE  # dry arms have no bus: the rig stays free for a recording
    assert replay.argv[:4] == ("so101-replay", f"--dataset.root={root}", "--dataset.episodes=1", "--target=dry")
    assert not any(a.startswith("--config_path") for a in replay.argv)
    estimate, _ = command_for("judge_estimate", {"dataset": "fold"}, place)
    assert "--dry_run=true" in estimate.argv
    scored, _ = command_for("judge", {"dataset": "fold", "scorer": "heuristic"}, place)
    assert scored.argv == ("so101-judge", f"--dataset.root={root}", "--scorer=heuristic")


def test_deploy_takes_over_and_scores_live_with_the_chosen_runtime(tmp_path: Path):
    place = Place(tmp_path / "ws")
    checkpoint = tmp_path / "pretrained_model"
    checkpoint.mkdir()
    fields = {"dataset": "eval", "checkpoint": str(checkpoint), "runtime": "openvino", "episodes": "1"}
    line, lane = command_for("deploy", fields, place)
    assert lane is Lane.RIG
    assert {
        f"--policy.path={checkpoint}",
        "--policy.runtime=openvino",
        "--correction.enabled=true",
        "--live_scores.enabled=true",
        "--session.num_episodes=1",
    } <= set(line.argv)


def test_every_action_is_a_console_script_of_this_project(tmp_path: Path):
    import tomllib

    scripts = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())["project"]["scripts"]
    place = Place(tmp_path / "ws")
    _dataset(place, "fold")
    for name in ACTIONS:
        line, _ = command_for(name, {"dataset": "fold", "checkpoint": str(tmp_path)}, place)
        assert line.argv[0] in scripts, name


def test_the_page_s_keys_are_the_terminal_s_keys():
    for name, letter in KEYS.items():
        assert parse(letter.encode()) == [Key(name)], name
    assert parse(ESTOP_KEY.encode()) == [Key.ESTOP]


def test_doctor_rows_are_read_from_its_json_among_other_output():
    row = {"subject": "left_follower", "check": "port", "status": "pass", "detail": "/dev/ttyACM0", "next_step": ""}
    text = "Svt[info]: encoder\n" + json.dumps([row], indent=2) + "\nSvt[info]: done"
    assert doctor_rows(text) == [row]
    assert doctor_rows("error: no rig") is None
