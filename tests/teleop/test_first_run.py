"""A first run cannot strand its dataset: an empty new one is removed, resume needs a dataset, messages are flags.

The writer is the real one (its own process, LeRobot's files); the rig file is the virtual rig's.
"""

import shlex
import signal

import pytest

from robot.cli import parse_command
from robot.signals import SignalStop, StopSignals
from teleop.commands.record import RecordConfig
from teleop.dataset.durable import DurableDataset
from teleop.dataset.errors import DatasetExistsError, NoDatasetToResumeError
from teleop.dataset.writer_process import DatasetWriter
from teleop.dataset_options import close_dataset, dataset_writer
from tests.support.rig_files import rig_yaml
from tests.teleop.dataset.helpers import record, spec, tree

pytestmark = pytest.mark.slow


def _config(tmp_path, *flags: str) -> RecordConfig:
    (tmp_path / "rig").mkdir(exist_ok=True)
    rig = rig_yaml(tmp_path / "rig")
    return parse_command(RecordConfig, [f"--config_path={rig}", f"--dataset.root={tmp_path / 'ds'}", *flags])


def test_resume_of_a_folder_without_a_dataset_is_refused_with_the_flag_to_drop_and_creates_nothing(tmp_path):
    config = _config(tmp_path, "--dataset.resume=true")
    before = tree(tmp_path)
    with pytest.raises(NoDatasetToResumeError) as refused:
        dataset_writer(config.dataset, config.rig)
    assert tree(tmp_path) == before
    text = str(refused.value)
    assert "\n" not in text
    assert str(tmp_path / "ds") in text
    assert "drop --dataset.resume=true" in text
    assert "nothing was created" in text


def test_an_existing_dataset_is_refused_with_the_resume_flag_as_the_next_step(tmp_path):
    with DurableDataset.open(spec(tmp_path / "ds")) as dataset:
        record(dataset, 0, 3)
    with pytest.raises(DatasetExistsError) as refused:
        DurableDataset.open(spec(tmp_path / "ds", resume=False))
    next_step = str(refused.value).split("Next: ", 1)[1]
    flags = [word for word in shlex.split(next_step) if word.startswith("--")]
    assert flags == ["--dataset.resume=true", "--dataset.root=<folder>"]  # the options so101-record takes
    config = _config(tmp_path, "--dataset.resume=true")  # and the first one parses as given
    assert config.dataset.resume is True


def test_a_new_dataset_left_empty_is_removed_and_the_folder_can_be_created_again(tmp_path):
    root = tmp_path / "ds"
    writer = DatasetWriter(spec(root, resume=False))
    opened = writer.open()
    assert opened.created
    assert (root / "meta/info.json").is_file()
    assert close_dataset(writer, opened, StopSignals()) is True
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no staging folder, no lock, nothing
    again = DatasetWriter(spec(root, resume=False))  # the same command works the next time
    assert close_dataset(again, again.open(), StopSignals()) is True


def test_a_dataset_with_a_saved_episode_or_one_this_run_resumed_is_kept(tmp_path):
    root = tmp_path / "ds"
    writer = DatasetWriter(spec(root, resume=False))
    opened = writer.open()
    record(writer, 0, 3)
    assert close_dataset(writer, opened, StopSignals()) is False
    kept = tree(root)
    resumed = DatasetWriter(spec(root, resume=True))
    assert close_dataset(resumed, resumed.open(), StopSignals()) is False  # not created by this run: kept
    assert tree(root).keys() == kept.keys()


def test_an_upload_happens_only_when_asked_for_and_the_run_ended_by_itself(tmp_path):
    from teleop.dataset.errors import HubUploadError
    from teleop.dataset_options import upload_if_asked

    asked = _config(tmp_path, "--dataset.push_to_hub=true").dataset
    assert upload_if_asked(_config(tmp_path).dataset, StopSignals(), removed=False) is False  # not asked
    assert upload_if_asked(asked, StopSignals(), removed=True) is False  # nothing left to upload
    stopped = StopSignals(announce=lambda line: None)
    with pytest.raises(SignalStop):  # outside any section a signal stops at once, as the handler does
        stopped.handle(signal.SIGTERM)
    assert upload_if_asked(asked, stopped, removed=False) is False
    with pytest.raises(HubUploadError, match="hf upload local/so101_fold"):
        upload_if_asked(asked, StopSignals(), removed=False)  # the suite runs with HF_HUB_OFFLINE=1
