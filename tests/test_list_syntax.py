"""One list syntax in every command: `a,b`, `[a,b]` and `a` are lists; integer lists take ranges; episodes take `all`.

Before, so101-report split a bare `--tags=a,b` into characters (draccus reads only `[a,b]`), judge
took `[0,3,4]` but not `0,3,4`, and replay took `0,2,5` but not `[0,2,5]`.
"""

import pytest

from evaluation.judge.config import JudgeCommandConfig
from evaluation.report.config import ReportCommandConfig
from policies.commands.replay import ReplayCommandConfig
from robot.cli import UsageError, parse_command
from robot.commands.arm_selection import select_arms
from robot.commands.calibrate import CalibrateConfig
from robot.shell.lists import bracketed, normalized_lists, split_list
from robot.shell.parse import parse_options


@pytest.mark.parametrize(
    ("value", "integers", "episodes", "expected"),
    [
        ("a,b", False, False, "[a,b]"),
        ("[a,b]", False, False, "[a,b]"),
        ("a", False, False, "[a]"),
        ("", False, False, "[]"),
        ("1-3,7", True, False, "[1,2,3,7]"),
        ("[0, 2-3]", True, False, "[0,2,3]"),
        ("-1", True, False, "[-1]"),  # a negative number, not a range
        ("all", True, True, "[]"),
    ],
)
def test_every_form_of_a_list_becomes_draccus_own(value, integers, episodes, expected):
    assert bracketed(value, integers=integers, episodes=episodes) == expected


def test_only_list_options_are_rewritten_and_a_list_of_sections_stays_yaml():
    argv = ["--tags=a,b", "--title=x,y", "--names", "A,B", "--stats.seed=3"]
    assert normalized_lists(ReportCommandConfig, argv) == [
        '--tags=["a","b"]',
        "--title=x,y",
        '--names=["A","B"]',
        "--stats.seed=3",
    ]
    cameras = '--rig.cameras=[{"name": "overhead", "width": 64}]'
    assert normalized_lists(CalibrateConfig, [cameras]) == [cameras]


@pytest.mark.parametrize("tags", ["smolvla-v2,act-v1", "[smolvla-v2,act-v1]"])
def test_report_takes_a_bare_list_as_a_list(tags, tmp_path):
    store = tmp_path / "s.sqlite"
    config = parse_options(ReportCommandConfig, [f"--tags={tags}", f"--store_path={store}"], doc="", example="")
    assert config.tags == ("smolvla-v2", "act-v1")


@pytest.mark.parametrize(
    ("episodes", "expected"), [("0,3,4", (0, 3, 4)), ("[0,3,4]", (0, 3, 4)), ("1-3", (1, 2, 3)), ("all", ())]
)
def test_judge_and_replay_read_an_episode_list_alike(episodes, expected, tmp_path):
    judge = parse_options(
        JudgeCommandConfig, [f"--dataset.root={tmp_path}", f"--dataset.episodes={episodes}"], doc="", example=""
    )
    replay = parse_command(ReplayCommandConfig, [f"--dataset.root={tmp_path}", f"--dataset.episodes={episodes}"])
    assert tuple(judge.dataset.episodes) == tuple(replay.dataset.episodes) == expected  # () is every episode


def test_a_malformed_range_is_one_line_naming_the_option(tmp_path):
    with pytest.raises(UsageError, match=r"^--dataset.episodes=1-x: expected a list of numbers or ranges"):
        parse_command(ReplayCommandConfig, [f"--dataset.root={tmp_path}", "--dataset.episodes=1-x"])
    with pytest.raises(UsageError, match=r"^--dataset.episodes=a: expected"):
        parse_options(JudgeCommandConfig, [f"--dataset.root={tmp_path}", "--dataset.episodes=a"], doc="", example="")


def test_arms_take_the_same_list_forms():
    rig = parse_command(CalibrateConfig, []).rig
    assert split_list("[left_follower, left_leader]") == ["left_follower", "left_leader"]
    for arms in ("left_follower,left_leader", "[left_follower,left_leader]"):
        assert select_arms(rig, arms) == ["left_follower", "left_leader"]


@pytest.mark.parametrize("item", ["2:10:40", "no", "1e3", "0755", "on", "null"])
def test_a_text_item_reaches_the_command_as_written_not_as_yaml_reads_it(item, tmp_path):
    """Unquoted, YAML takes `2:10:40` for 7840 (base 60), `no` for False, `1e3` for a float, `null` for None."""
    config = parse_options(ReportCommandConfig, [f"--tags={item},b"], doc="", example="so101-report")
    assert config.tags == (item, "b")


def test_a_text_option_keeps_its_text_though_it_reads_as_yaml():
    """draccus reads values as YAML: a JSON joint map arrived as a Python repr, `01` as `1`."""
    from policies.commands.replay import ReplayCommandConfig
    from robot.cli import parse_command

    joint_map = '{"left_shoulder_pan.pos": "it\'s: pan"}'
    config = parse_command(
        ReplayCommandConfig,
        ["--dataset.root=x", f"--joint_map={joint_map}", "--dataset.repo_id", "01"],
    )
    assert config.joint_map == joint_map
    assert config.dataset.repo_id == "01"
    assert config.dataset.episodes == (0,)  # lists and numbers are not text: as before
    from robot.commands.release import ReleaseConfig

    arms = parse_command(ReleaseConfig, ["--arms=[left_follower,right_follower]"]).arms
    assert arms == "[left_follower,right_follower]"  # was "['left_follower', 'right_follower']"
