"""so101-demo's policy steps: a dry run of a demonstration, a tiny ACT trained with LeRobot, its rollouts.

    so101-replay (dry arms, episode 0) -> lerobot-train (tiny ACT, CPU) -> so101-deploy (recorded rollouts)

The replay and the rollouts run on the virtual rig, which is up for these steps.
"""

from policies.demo.layout import DEMO_REPO_ID, EVAL_REPO_ID
from policies.demo.runner import StepRunner


def policy_steps(runner: StepRunner) -> None:
    """Dry-run a demonstration, train a tiny ACT on the demonstrations, deploy it and record its rollouts."""
    config, paths = runner.config, runner.paths
    runner.say(
        "dry-run a demonstration before it touches the arms",
        "so101-replay pushes episode 0's actions through the same control loop and safety layer on dry "
        "arms (every command checked and logged, nothing sent), as fast as possible, and writes a report: "
        "trajectories, limit hits and clamps with frame numbers, velocity/acceleration/jerk spikes, "
        "gripper events, and a sketch of the commanded pose beside the recorded overhead video.",
    )
    runner.run(
        "so101-replay",
        *runner.rig_args,
        f"--dataset.root={paths.demonstrations}",
        f"--dataset.repo_id={DEMO_REPO_ID}",
        "--dataset.episodes=0",
        "--report.stills=3",
        f"--report.output_dir={paths.replay_report}",
    )
    runner.say(
        "train a tiny ACT with LeRobot",
        f"lerobot-train, unchanged, on the demonstrations: a small ACT (no pretrained backbone, chunk 30) "
        f"for {config.train_steps} steps on the CPU. Far too little to learn the fold; it makes a real "
        "LeRobot checkpoint for the next step. On your machine: train for ~100k steps on a GPU.",
    )
    runner.run(
        "lerobot-train",
        f"--dataset.repo_id={DEMO_REPO_ID}",
        f"--dataset.root={paths.demonstrations}",
        "--dataset.video_backend=pyav",
        "--policy.type=act",
        "--policy.device=cpu",
        "--policy.push_to_hub=false",
        "--policy.pretrained_backbone_weights=null",
        "--policy.dim_model=64",
        "--policy.n_heads=2",
        "--policy.dim_feedforward=128",
        "--policy.n_encoder_layers=1",
        "--policy.n_decoder_layers=1",
        "--policy.n_vae_encoder_layers=1",
        "--policy.chunk_size=30",
        "--policy.n_action_steps=30",
        f"--steps={config.train_steps}",
        "--batch_size=4",
        "--num_workers=0",
        f"--save_freq={config.train_steps}",
        f"--log_freq={max(1, config.train_steps // 3)}",
        "--wandb.enable=false",
        f"--output_dir={paths.training}",
        log="lerobot_train.log",
    )
    runner.say(
        "deploy the policy and record the rollouts",
        f"so101-deploy checks the checkpoint's cameras, image sizes and joints against the rig before any "
        f"weights load, then runs it at 30 Hz for {config.num_rollouts} rollout(s) of {config.rollout_s:g} s. "
        "Before each rollout the followers are ramped to where the demonstrations started (--start_pose). "
        "The async engine computes the next chunk while the current one executes, so the loop never waits; "
        "the safety layer is on; every rollout is recorded as an evaluation dataset, with per-tick inference "
        "facts (chunk, latency, queue depth, starved ticks) kept beside it.",
    )
    runner.run(
        "so101-deploy",
        *runner.rig_args,
        f"--policy.path={paths.checkpoint}",
        "--policy.device=cpu",
        f"--dataset.repo_id={EVAL_REPO_ID}",
        f"--dataset.root={paths.rollouts}",
        "--dataset.vcodec=h264",
        f"--session.num_episodes={config.num_rollouts}",
        f"--session.episode_s={config.rollout_s}",
        f"--session.reset_s={config.reset_s}",
        "--start_pose=demonstrations",
    )
