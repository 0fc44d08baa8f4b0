r"""so101-studio: the whole workflow in one local web page, on the same code as the commands.

One page for the rig (the doctor's rows, calibration, teleoperation with the cameras live, an e-stop
button that is the e-stop key), recording (start, save, re-record, discard, the episode counter and
each episode's quality card as it is saved), deployment (a checkpoint and runtime, take over and hand
back, live scores), the datasets (so101-review's episodes, overrides, health and curation pages) and
the judge (the dry run's cost estimate first, then the scoring). Every button runs the command it
shows beside it, in its own process, exactly as typed into a terminal: copy the line to learn the CLI.

Examples:
    so101-studio                                                       # the virtual rig
    so101-studio --config_path=hardware_configs/so101_bimanual.yaml    # your arms
    so101-studio --config_path=hardware_configs/so101_bimanual.yaml --workspace=~/fold --server.open_browser=true

    export SO101_REVIEW_TOKEN=$(python -c "import secrets; print(secrets.token_urlsafe(24))")
    so101-studio --server.host=0.0.0.0                                 # other machines, with the token

One page controls the studio at a time; any other watches read-only until it takes control over. The
e-stop works from every page. A command that drives the arms keeps running when its page closes or
reloads; when no page has control for --lapse_s seconds it is stopped as Ctrl-C stops it (recording:
the episode in progress is discarded, every saved one kept). Ctrl-C here stops every command that way.
"""

from __future__ import annotations

import logging
import signal
import sys
import webbrowser
from pathlib import Path

from rich.console import Console
from rich.logging import RichHandler

from evaluation.review.config import check_bind, is_loopback, token_warnings
from evaluation.review.server import ReviewServer
from evaluation.studio.actions import Place
from evaluation.studio.app import create_app
from evaluation.studio.control import ControlLease
from evaluation.studio.options import StudioConfig
from evaluation.studio.studio import Studio
from robot.shell.errors import UsageError
from robot.shell.exit_codes import EXIT_STATUS, Exit
from robot.shell.files import flag_value, why_unreadable
from robot.shell.parse import parse_args
from robot.shell.preflight import prepared_args
from robot.shell.run import run_body

EXAMPLE = "so101-studio"
RIG_FLAG = "--config_path"
RIG_FILE_HELP = "the rig file every rig command it runs is given (hardware_configs/*.yaml); none: the virtual rig"
console = Console()


def main(argv: list[str] | None = None) -> int:
    """Serve the studio until Ctrl+C; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(
        level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)]
    )
    return run_body(lambda: _run(argv))[0]


def _parse(argv: list[str]) -> tuple[StudioConfig, Path | None]:
    """`--help` (printed, exit 0), else the studio's options and its rig file (None: the virtual rig).

    Its `--config_path` is the rig file, as in every rig command, passed on to each one it runs; the
    studio's own few options have no file.

    Raises:
        UsageError: an unknown option, a value not allowed, or a rig file that cannot be read.
    """
    rig_file, rest = flag_value(argv, RIG_FLAG)
    rest = prepared_args(
        StudioConfig, rest, doc=__doc__, config_file=RIG_FILE_HELP, file_flag=RIG_FLAG, exit_status=EXIT_STATUS
    )
    if rig_file is not None and (what := why_unreadable(rig_file.expanduser())) is not None:
        raise UsageError(
            f"{RIG_FLAG}={rig_file} {what}. Next: give your rig file, or drop it for the virtual rig: {EXAMPLE}"
        )
    config = parse_args(StudioConfig, rest, config_path=None, source=None)
    return config, None if rig_file is None else rig_file.expanduser().resolve()


def parse_command(config_cls: type[StudioConfig], argv: list[str]) -> StudioConfig:
    """The studio's options from `argv`, in the shape of the rig commands' `robot.cli.parse_command`.

    (tests/support/next_step_parsing.py parses every printed next step with its command's own parser.)
    """
    if config_cls is not StudioConfig:
        raise TypeError(f"so101-studio parses StudioConfig, not {config_cls.__name__}")
    return _parse(argv)[0]


def _run(argv: list[str]) -> int:
    config, rig_file = _parse(argv)
    server_config = config.server
    token = server_config.token()
    check_bind(server_config.host, token)
    for warning in token_warnings(argv, server_config):
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False, soft_wrap=True)
    workspace = config.workspace.expanduser().resolve()
    (workspace / "datasets").mkdir(parents=True, exist_ok=True)
    studio = Studio(Place(workspace, rig_file), ControlLease(config.lapse_s))
    app = create_app(studio, access_token=token, check_host=not token, reviewer=config.reviewer_name())
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # one way out, whatever the signal
        signal.signal(signum, signal.default_int_handler)
    server = ReviewServer(app, server_config.host, server_config.port)
    studio.start()
    try:
        server.start()
        url = f"{server.url}/" + (f"?token={token}" if token else "")
        console.print(
            f"studio: [bold]{url}[/bold]  (Ctrl+C stops it and every command it started)",
            highlight=False,
            soft_wrap=True,
        )
        console.print(f"rig {rig_file or 'the virtual rig'}, workspace {workspace}", highlight=False, soft_wrap=True)
        if not is_loopback(server_config.host):
            console.print("reachable from other machines: they open the URL with this machine's address")
        if server_config.open_browser:
            webbrowser.open(url)
        server.wait()
    except KeyboardInterrupt:
        console.print("stopping: every running command gets Ctrl-C, its safe stop")
    finally:
        server.stop()
        studio.close()
        app.state.mounts.close()
    return Exit.DONE


if __name__ == "__main__":
    sys.exit(main())
