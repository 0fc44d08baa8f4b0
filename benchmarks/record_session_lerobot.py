"""A user's session, LeRobot's side: stock `lerobot-record` (its `record()`) on the virtual rig.

    python -m benchmarks.record_session_lerobot ROOT EPISODES EPISODE_S RESET_S VCODEC   # run by record_session.py

LeRobot's own BiSOFollower and BiSOLeader on the emulated buses (the scripted hands loop the cloth
fold on the leaders), its recording loop, dataset writer and video encoding with their defaults but the codec.
Its CLI can build no camera the virtual rig serves, so the three cameras are our virtual ones
behind LeRobot's camera interface (benchmarks/deploy_loop_lerobot.py's plugin camera), rendering the
scripted fold at 640x480: what is measured around them (frames written, encoded, held) is LeRobot's.
Everything else is `record(RecordConfig)` as `lerobot-record` builds it from its flags. It logs
"Recording episode N" as each episode starts, which the parent reads as the end of the one before.
"""

import sys
from pathlib import Path

from benchmarks.deploy_loop_lerobot import SharedCamera, VirtualRigCameraConfig
from benchmarks.record_rig import RIG_ID, rig_config
from benchmarks.session_facts import CAMERAS, FPS, LEROBOT_REPO, TASK


def run(root: Path, episodes: int, episode_s: float, reset_s: float, vcodec: str) -> None:
    from lerobot.configs.dataset import DatasetRecordConfig
    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.robots.bi_so_follower import BiSOFollowerConfig
    from lerobot.robots.so_follower import SOFollowerConfig
    from lerobot.scripts.lerobot_record import RecordConfig, record
    from lerobot.teleoperators.bi_so_leader import BiSOLeaderConfig
    from lerobot.teleoperators.so_leader import SOLeaderConfig

    from robot.cameras.factory import make_cameras
    from robot.cameras.virtual.joint_sources import fold_source
    from robot.rig_ports import rig_ports

    config = rig_config(root / "rig", CAMERAS, FPS)
    with rig_ports(config) as found:
        with found.client() as client:
            client.play("cloth_fold", loop=True)
        ours = make_cameras(config.cameras, joint_source=fold_source())
        size = {name: (width, height) for name, height, width in CAMERAS}
        cameras = {
            name: VirtualRigCameraConfig(
                camera=SharedCamera(camera), width=size[name][0], height=size[name][1], fps=FPS
            )
            for name, camera in ours.items()
        }
        ports = found.ports
        calibration = config.calibration.dir
        robot = BiSOFollowerConfig(
            id=RIG_ID,
            calibration_dir=calibration / "robots" / "so_follower",
            left_arm_config=SOFollowerConfig(port=ports["left_follower"], cameras={"wrist": cameras["left_wrist"]}),
            right_arm_config=SOFollowerConfig(port=ports["right_follower"], cameras={"wrist": cameras["right_wrist"]}),
            cameras={"overhead": cameras["overhead"]},
        )
        teleop = BiSOLeaderConfig(
            id=RIG_ID,
            calibration_dir=calibration / "teleoperators" / "so_leader",
            left_arm_config=SOLeaderConfig(port=ports["left_leader"]),
            right_arm_config=SOLeaderConfig(port=ports["right_leader"]),
        )
        dataset = DatasetRecordConfig(
            repo_id=LEROBOT_REPO,
            single_task=TASK,
            root=root / "dataset",
            fps=FPS,
            episode_time_s=episode_s,
            reset_time_s=reset_s,
            num_episodes=episodes,
            push_to_hub=False,
            rgb_encoder=RGBEncoderConfig(vcodec=vcodec),
        )
        record(RecordConfig(robot=robot, dataset=dataset, teleop=teleop, display_data=False, play_sounds=False))


if __name__ == "__main__":
    run(Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
