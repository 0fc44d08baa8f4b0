"""so101-demo: the whole product on the virtual rig, step by step, with the commands a user would type.

    so101-demo                     # or: make demo (about 4 minutes on 2 cores)
    so101-demo --output_dir=outputs/demo --num_episodes=3 --episode_s=8 --train_steps=30 --num_rollouts=2
    so101-demo --teleop_s=0 --lerobot_teleop=false --train_steps=2   # a quick pass through every step

Each step runs a real console script (a child process, exactly as you would type it) against four
emulated SO-101 arms and three synthetic cameras:

    so101-sim ─ so101-calibrate ─ so101-doctor ─ so101-teleop ─ so101-record ─ lerobot-teleoperate
        ─ so101-replay (dry run of a demonstration) ─ lerobot-train (a tiny ACT on the demonstrations)
        ─ so101-deploy (rollouts recorded as an evaluation dataset)
        ─ so101-judge (LLM judge when ANTHROPIC_API_KEY is set; else the labelled heuristic + a dry run)
        ─ so101-report (demonstrations versus the policy) ─ the so101-review command to open

The demo's rig is hardware_configs/virtual.yaml with the cameras at `camera_width` x `camera_height`
(320x240 by default, so recording, training and deploying fit a 2-core machine in minutes); its
rig file is written into the output folder, so every printed command can be pasted as it is.
Its pieces live in policies/demo/: the options, the folder layout, the step list and the closing summary.
"""

import signal
import sys
import time

from rich.console import Console
from rich.panel import Panel

from policies.demo.config import DemoConfig
from policies.demo.layout import check_output_dir
from policies.demo.runner import StepRunner
from policies.demo.steps import run_steps
from policies.demo.summary import next_steps, summary
from robot.shell.errors import UsageError
from robot.shell.exit_codes import Exit, stopped_by
from robot.shell.parse import parse_options
from robot.shell.say import say, say_error


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-demo: parse, build the step runner, run the steps, report."""
    console = Console()
    args = sys.argv[1:] if argv is None else argv
    try:
        config = parse_options(DemoConfig, args, doc=__doc__, example="so101-demo")
        check_output_dir(config.output_dir)
    except UsageError as e:
        say_error(str(e))
        return Exit.USAGE
    start = time.monotonic()
    runner = StepRunner(config, console)
    try:
        judged_with_llm = run_steps(runner)
    except SystemExit as e:  # a step failed: its line names the step and its log
        say(str(e))
        return Exit.FAILED
    except KeyboardInterrupt:
        say("interrupted")
        return stopped_by(signal.SIGINT)
    elapsed_s = time.monotonic() - start
    console.print(Panel(summary(runner.paths, elapsed_s, judged_with_llm), title="demo finished", title_align="left"))
    console.print(next_steps(runner.paths), soft_wrap=True, highlight=False)
    return Exit.DONE


if __name__ == "__main__":
    sys.exit(main())
