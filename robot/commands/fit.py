"""so101-fit: fit the virtual followers to a recording of your own arms, and check the fit on episodes it did not see.

    so101-fit --dataset.root=outputs/datasets/fold --config_path=my_twin.yaml                # both arms, report only
    so101-fit --dataset.root=~/rec/pick --dataset.episodes=0-3 --joint_map=left --config_path=my_twin.yaml --write=true
    so101-fit --dataset.root=~/rec/pick --joint_map=right --validate.episodes=4,5 --dataset.units=percent

Reads a LeRobot recording of followers (bimanual, or one arm with --joint_map=left|right, as
so101-replay reads it; degrees or percent of range, detected or --dataset.units), fits the servo
model's free rows per arm and, where the recording moves a joint enough, per joint (the loop gain,
latency and supply voltage of the arm; each joint's own gain and damping; how stiffly what the
gripper held pushed back), on the chosen episodes but the held-out ones (--validate.episodes,
default the last chosen). It then replays the held-out episodes through the emulated arm under the
rig's table (before) and the fitted one (after) and prints, per joint, lag, tracking error and
gravity sag against the real arm's, with a plot of one held-out episode (--output_dir).
--write=true stores each fitted arm's table, with where it came from, in the rig file's
`virtual.servo_table` (created beside the rig file as <rig>.servo.json when it names none), so
so101-sim, so101-replay --target=virtual and every command on that rig move like your arms.
Exit status: 0 fitted, 1 failed (nothing written), 2 usage.
"""

import sys

from rich.console import Console

from robot.cli import parse_command, run_command
from robot.shell.files import config_path_arg
from robot.virtual.twin.options import FitCommandConfig
from robot.virtual.twin.run import run_fit


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-fit."""

    def body() -> int:
        args = sys.argv[1:] if argv is None else argv
        config = parse_command(FitCommandConfig, args, doc=__doc__)
        return run_fit(config, config_path_arg(args), Console())

    return run_command(body, args=argv)


if __name__ == "__main__":
    sys.exit(main())
