"""One block's so101-deploy: its flags, and how the campaign waits for it (signals noted, not fatal)."""

import signal
import sys

import pytest

from evaluation.campaign.deploy_call import (
    ENGINE_KINDS,
    START_POSES,
    BlockCall,
    DeployOptions,
    DeploySession,
    run_deploy,
)
from evaluation.campaign.errors import CampaignError
from evaluation.errors import ConfigError
from policies.engines.config import EngineKind
from policies.start_pose import StartPose


def _call(root) -> BlockCall:
    return BlockCall("/ckpt/act", "B", root / "policy_B", "local/fold_policy_B", 2, "ana", ("R1", "R2", "R3"))


def test_a_block_names_the_label_not_the_checkpoint_on_screen_and_resumes_only_an_existing_dataset(tmp_path):
    assert _call(tmp_path).args() == [
        "--policy.path=/ckpt/act",
        "--policy.blind_label=B",
        f"--dataset.root={tmp_path / 'policy_B'}",
        "--dataset.repo_id=local/fold_policy_B",
        "--session.num_episodes=2",
        "--live_scores.enabled=true",
        "--live_scores.operator=ana",
        "--live_scores.criteria=[R1,R2,R3]",
    ]
    (tmp_path / "policy_B" / "meta").mkdir(parents=True)
    (tmp_path / "policy_B" / "meta" / "info.json").write_text("{}")
    assert "--dataset.resume=true" in _call(tmp_path).args()


def test_pass_through_flags_are_spelled_as_so101_deploy_spells_them(tmp_path):
    options = DeployOptions(config_path=tmp_path / "rig.yaml", session=DeploySession(episode_s=40.0, reset_s=5.0))
    assert options.flags() == [
        f"--config_path={tmp_path / 'rig.yaml'}",
        "--session.episode_s=40.0",
        "--session.reset_s=5.0",
    ]
    assert DeployOptions().flags() == []


def test_engine_kinds_are_deploys_local_ones():
    assert set(ENGINE_KINDS) == {k.value for k in EngineKind} - {"remote"}
    assert set(START_POSES) == {p.value for p in StartPose}
    assert DeployOptions(start_pose="demonstrations").flags() == ["--start_pose=demonstrations"]
    with pytest.raises(ConfigError, match=r"deploy.start_pose='there'; allowed: \['here', 'demonstrations'\]"):
        DeployOptions(start_pose="there")


def test_bad_pass_through_values_are_refused():
    with pytest.raises(ConfigError, match=r"episode_s=0\.0"):
        DeploySession(episode_s=0.0)
    with pytest.raises(CampaignError, match=r"no-such-program-anywhere not found\. Next: install"):
        DeployOptions(program="no-such-program-anywhere").command()


def test_a_signal_to_the_campaign_waits_for_the_block_then_is_reported():
    child = "import os, signal; os.kill(os.getppid(), signal.SIGTERM)"
    result = run_deploy([sys.executable, "-c", child])
    assert (result.code, result.signal) == (0, signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the campaign's own handling is back


def test_a_block_ended_by_a_signal_reads_as_128_plus_n():
    child = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    assert run_deploy([sys.executable, "-c", child]).code == 128 + signal.SIGKILL


def test_so101_deploy_parses_a_blocks_flags_as_the_campaign_means_them(tmp_path):
    """The real DeployConfig reads every flag a block passes (a renamed deploy option fails here, not mid-campaign)."""
    from policies.commands.deploy import DeployConfig
    from robot.cli import parse_command
    from tests.support.record_runs import rig_file

    options = DeployOptions(config_path=rig_file(tmp_path), session=DeploySession(episode_s=40.0, reset_s=5.0))
    config = parse_command(DeployConfig, [*options.flags(), *_call(tmp_path).args()])
    assert (config.policy.path, config.policy.blind_label) == ("/ckpt/act", "B")
    assert (config.dataset.root, config.dataset.repo_id) == (tmp_path / "policy_B", "local/fold_policy_B")
    assert (config.session.num_episodes, config.session.episode_s, config.session.reset_s) == (2, 40.0, 5.0)
    assert config.live_scores.enabled
    assert (config.live_scores.operator, config.live_scores.criteria) == ("ana", ("R1", "R2", "R3"))
