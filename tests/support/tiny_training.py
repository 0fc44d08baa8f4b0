"""A tiny ACT trained for a few steps on a dataset through LeRobot's own loader: proof that lerobot-train can use it."""

from pathlib import Path


def train_tiny_act(root: Path, repo_id: str) -> None:
    """LeRobot's own data loading feeds a tiny ACT for a few optimisation steps (a finite loss each)."""
    import torch
    from lerobot.configs.types import FeatureType
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors
    from lerobot.utils.feature_utils import dataset_to_policy_features

    dataset = LeRobotDataset(repo_id, root=root, video_backend="pyav")
    features = dataset_to_policy_features(dataset.meta.features)
    outputs = {k: f for k, f in features.items() if f.type is FeatureType.ACTION}
    inputs = {k: f for k, f in features.items() if k not in outputs}
    config = ACTConfig(
        input_features=inputs,
        output_features=outputs,
        pretrained_backbone_weights=None,
        dim_model=32,
        n_heads=2,
        dim_feedforward=64,
        n_encoder_layers=1,
        n_decoder_layers=1,
        n_vae_encoder_layers=1,
        chunk_size=5,
        n_action_steps=5,
        device="cpu",
    )
    delta = {"action": [i / dataset.meta.fps for i in range(config.chunk_size)]}
    training = LeRobotDataset(repo_id, root=root, delta_timestamps=delta, video_backend="pyav")
    policy = ACTPolicy(config)
    preprocess, _ = make_pre_post_processors(config, dataset_stats=training.meta.stats)
    loader = torch.utils.data.DataLoader(training, batch_size=4, shuffle=True)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-4)
    policy.train()
    for step, batch in enumerate(loader):
        loss, _ = policy.forward(preprocess(batch))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        assert torch.isfinite(loss)
        if step == 2:
            break
