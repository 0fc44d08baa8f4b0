r"""so101-review: browse a dataset's episodes, check judge scores against the videos and override them.

Any LeRobot v3.0 dataset opens, judged or not. The episodes page lists each episode's duration,
task and quality card (achieved fps, camera skew, lost frames, idle share, limit hits, verdict),
judge and effective scores per criterion with flags (routed, uncertain, audit sample), and filters
on all of them; an episode page plays the three camera views in sync with frame stepping, with the
joint traces under them on the same time axis (idle spans, safety interventions and lost camera
frames marked), the judge's evidence frames and observations, the motion check, and a
per-criterion override form with its audit trail. Overrides are appended to the evaluation store;
the judge's records never change. Keyboard shortcuts are listed on the page.

Examples:
    # Browse a fresh recording before judging it, at http://127.0.0.1:8765/:
    so101-review --dataset.root=outputs/datasets/fold_cloth

    # Check a dataset before lerobot-train, no server: one line per error or warning (shifted actions,
    # swapped state blocks or wrist cameras, timestamps, stats, videos); exit 1 on an error:
    so101-review --dataset.root=outputs/datasets/fold_cloth --check=true

    # Review a judged dataset (the store beside it):
    so101-review --dataset.root=outputs/datasets/fold_smolvla

    # Named reviewer, and open the page in the default browser:
    so101-review --dataset.root=outputs/datasets/fold_smolvla --reviewer=ana --server.open_browser=true

    # Only episodes judged under another name, or a store elsewhere:
    so101-review --dataset.root=data/fold_act --dataset.dataset_id=fold_act --store_path=eval/all.sqlite

    # On the lab network: an access token is required (share the printed URL with colleagues):
    export SO101_REVIEW_TOKEN=$(python -c "import secrets; print(secrets.token_urlsafe(24))")
    so101-review --dataset.root=outputs/datasets/fold_smolvla --server.host=0.0.0.0

    # The token from a file instead (kept out of `ps`; --server.access_token=... on the command line is not):
    (umask 077; python -c "import secrets; print(secrets.token_urlsafe(24))" > ~/.so101-review-token)
    so101-review --dataset.root=outputs/datasets/fold_smolvla --server.host=0.0.0.0 \\
        --server.access_token_file=~/.so101-review-token

Every override made through the page is recorded under the reviewer this server was started with
(--reviewer, else $USER): each person reviewing starts their own so101-review. Judge results and
overrides made before an episode was re-recorded or deleted are stale: the page names them and
leaves them out.
"""

from __future__ import annotations

import logging
import signal
import sys
import webbrowser
from pathlib import Path

from rich.console import Console
from rich.logging import RichHandler

from evaluation.episode_source import DatasetSource, open_dataset
from evaluation.errors import ConfigError
from evaluation.review.app import ReviewSettings, create_app
from evaluation.review.catalog import ReviewCatalog
from evaluation.review.config import ReviewCommandConfig, ServerConfig, check_bind, is_loopback, token_warnings
from evaluation.review.health import dataset_health
from evaluation.review.opened import opened_review
from evaluation.review.server import ReviewServer
from evaluation.view_map import view_map
from robot.shell.exit_codes import Exit
from robot.shell.old_spellings import OPTIONS_FILE, renamed
from robot.shell.parse import parse_options
from robot.shell.run import run_body

EXAMPLE = "so101-review --dataset.root=<dataset>"  # a command line that needs no config file
console = Console(stderr=False)


def main(argv: list[str] | None = None) -> int:
    """Run so101-review until Ctrl+C; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(
        level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)]
    )
    argv = renamed(argv, OPTIONS_FILE)  # token_warnings reads the options file's flag
    return run_body(lambda: _run(parse_options(ReviewCommandConfig, argv, doc=__doc__, example=EXAMPLE), argv))[0]


def _stop_on_terminal_signals() -> None:
    """Ctrl+C, SIGTERM and SIGHUP (a closed SSH session) stop the server: the same message, exit 0.

    SIGINT too, explicitly: a process started in the background of a script inherits SIGINT ignored,
    and Python then leaves it ignored (Ctrl+C did nothing when the suite ran from such a script).
    """
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.default_int_handler)


def _announce(
    server: ReviewServer,
    token: str | None,
    catalog: ReviewCatalog,
    source: DatasetSource,
    store_path: Path,
    reviewer: str,
    server_config: ServerConfig,
) -> None:
    """Print what is served where (inside the Ctrl+C handling: a signal may come at any point)."""
    url = f"{server.url}/" + (f"?token={token}" if token else "")
    judged = sum(1 for s in catalog.summaries() if s.result is not None)
    console.print(
        f"dataset {source.root} ({len(source.episodes)} episodes, {judged} judged as '{source.dataset_id}'), "
        f"store {store_path}, reviewer [bold]{reviewer}[/bold]",
        soft_wrap=True,
    )
    if not judged:
        console.print(f"[yellow]no judge results for '{source.dataset_id}' in this store[/yellow]: run so101-judge")
    stale = catalog.stale()
    if stale:
        console.print(
            f"[yellow]{len(stale.results)} judge result(s) and {len(stale.overrides)} override(s) are stale[/yellow] "
            f"(made before their episode was deleted or changed): left out, and named on the page",
            soft_wrap=True,
        )
    console.print(f"review page: [bold]{url}[/bold]  (Ctrl+C stops)", soft_wrap=True, highlight=False)
    if not is_loopback(server_config.host):
        console.print("reachable from other machines: they open the URL with this machine's address")
    if server_config.open_browser:
        webbrowser.open(url)


def _check(config: ReviewCommandConfig) -> int:
    """Print the dataset's health, one line per error or warning and a summary; no server, no store."""
    root = config.dataset.root
    if root is None:  # also checked when the configuration is parsed
        raise ConfigError("dataset.root is required: pass --dataset.root=<LeRobot dataset folder>")
    source = open_dataset(root, config.dataset.dataset_id or None, view_map(config.dataset.views))
    report = dataset_health(source)
    for line in report.lines():
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    return Exit.FAILED if report.count("error") else Exit.DONE


def _run(config: ReviewCommandConfig, argv: list[str]) -> int:
    if config.check:
        return _check(config)
    server_config = config.server
    token = server_config.token()
    check_bind(server_config.host, token)  # before anything is opened
    for warning in token_warnings(argv, server_config):
        console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False, soft_wrap=True)
    reviewer = config.reviewer_name()
    root = config.dataset.root
    if root is None:  # also checked when the configuration is parsed
        raise ConfigError("dataset.root is required: pass --dataset.root=<LeRobot dataset folder>")

    def say(line: str) -> None:
        console.print(line, highlight=False, soft_wrap=True, markup=False)

    opened = opened_review(
        root,
        say=say,
        dataset_id=config.dataset.dataset_id or None,
        views=config.dataset.views,
        store_path=config.store_path,
        audit=config.audit,
    )
    with opened as review:
        _stop_on_terminal_signals()
        settings = ReviewSettings(reviewer=reviewer, access_token=token, check_host=not token)
        server = ReviewServer(
            create_app(review.catalog, review.overrides, settings), server_config.host, server_config.port
        )
        server.start()
        try:
            _announce(server, token, review.catalog, review.source, review.store_path, reviewer, server_config)
            server.wait()
        except KeyboardInterrupt:
            console.print("stopped; every recorded override is in the store")
        finally:
            server.stop()
    return Exit.DONE


if __name__ == "__main__":
    sys.exit(main())
