"""A tiny camera-less policy checkpoint that `lerobot-rollout` loads and runs on the bimanual SO-101, offline.

Why not `write_tiny_act`: LeRobot's CLI builds only the cameras it knows (OpenCV, RealSense, ZMQ,
Reachy2) and the virtual rig serves none of them, so the rollout's robot has no camera. LeRobot
0.6.1's ACT cannot run without one: its config refuses a policy with neither an image nor an
environment state, and its forward pass reads `observation.state` even when the state is fed as
the environment state (`--rename_map` removes the key it renames), so there is no camera-less ACT.
TD-MPC takes the joint state alone. With `use_mpc=False` it is one small MLP per tick (no planning,
no chunk), which keeps the 2-core machine free for the loop whose handover is measured; the
handover itself does not depend on the policy, whose weights are random anyway.
"""

from pathlib import Path


def write_state_only_tdmpc(directory: Path, *, seed: int = 0) -> Path:
    """Save a random-weight TD-MPC mapping the 12 bimanual joints to 12 goals, as `lerobot-train` saves one."""
    import torch
    from lerobot.policies import make_pre_post_processors
    from lerobot.policies.tdmpc.configuration_tdmpc import TDMPCConfig
    from lerobot.policies.tdmpc.modeling_tdmpc import TDMPCPolicy

    from policies.testing.tiny_policies import TinyPolicy, policy_features, save_checkpoint
    from robot.joints import BIMANUAL_KEYS

    inputs, outputs, stats = policy_features((), BIMANUAL_KEYS, BIMANUAL_KEYS)
    config = TDMPCConfig(
        input_features=inputs,
        output_features=outputs,
        device="cpu",
        use_mpc=False,  # the policy MLP alone: one action per call
        n_action_repeats=1,
        state_encoder_hidden_dim=64,
        latent_dim=16,
        mlp_dim=64,
        q_ensemble_size=2,
    )
    torch.manual_seed(seed)
    policy = TDMPCPolicy(config)
    policy.eval()
    preprocessor, postprocessor = make_pre_post_processors(config, dataset_stats=stats)
    return save_checkpoint(TinyPolicy(policy, preprocessor, postprocessor), directory)
