"""so101-report: compare policies from their judged episodes, with honest uncertainty for a handful of episodes.

For each policy (a judged dataset, a run tag, or both): n, the mean total reward with a 95 %
t-interval (and BCa), per-criterion means and success rates with Wilson intervals, partial and full
success rates, the scorer's figures (a judge model's or the offline heuristic's, always named as
such) beside person-adjusted ones (latest so101-review override, else the scorer's), the override
rate, scorer-versus-person agreement on reviewed cells, the scorer and people against virtual ground
truth where episodes carry it (stored by the judge command's --scorer=truth), and for every pair of
policies the difference with a Welch interval and a permutation test. Writes report.html (one
self-contained file), report.md, report.json and plots/*.png, and prints a summary.

Examples:
    # Two policies, each a judged dataset (the store sits beside each dataset):
    so101-report --datasets=[outputs/datasets/fold_smolvla,outputs/datasets/fold_act] --names=[SmolVLA,ACT]

    # Two run tags in one store (so101-judge --run.tag=...), into a chosen folder:
    so101-report --store_path=outputs/datasets/fold.evaluation.sqlite --tags=[smolvla-v2,act-v1] --output_dir=out/fold

    # Offline heuristic scores only, another seed for the Monte Carlo parts:
    so101-report --datasets=[outputs/datasets/fold_act] --scorer=heuristic --stats.seed=7

    # Policies given in full in a YAML file (policies: [{name, dataset_root, store_path, tag}, ...]):
    so101-report --options_path=report.yaml

    # A blind so101-campaign: which checkpoint each label was, and the difference in mean live-scored total:
    so101-report --campaign.root=outputs/campaigns/fold
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from evaluation.report.campaign import CampaignReveal, campaign_root, reveal_campaign, write_reveal
from evaluation.report.config import ReportCommandConfig
from evaluation.report.load import load_policy
from evaluation.report.model import Report, build_report
from evaluation.report.output import ReportFiles, write_report
from evaluation.report.plots import render_plots
from evaluation.report.scores import View
from evaluation.report.tables import fmt_estimate, fmt_p, fmt_rate, truth_line
from robot.shell.exit_codes import Exit
from robot.shell.parse import parse_options
from robot.shell.run import run_body

EXAMPLE = "so101-report --datasets=[<dataset>]"  # a command line that needs no config file
console = Console(stderr=False)


def main(argv: list[str] | None = None) -> int:
    """Run so101-report; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(
        level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)]
    )

    def body() -> int:
        return _run(parse_options(ReportCommandConfig, argv, doc=__doc__, example=EXAMPLE))

    stopped = "interrupted: no report written (a previous report in the folder is intact)"
    return run_body(body, stopped=lambda _: stopped)[0]


def _run(config: ReportCommandConfig) -> int:
    specs = config.all_policies()
    if (root := campaign_root(config.campaign.root, config.datasets)) is not None:
        labels = [s.label() for s in specs] or [f"campaign_{root.resolve().name}"]
        _print_reveal(reveal_campaign(root), config.resolved_output_dir(labels))
        if not specs:
            return Exit.DONE
    out_dir = config.resolved_output_dir([s.label() for s in specs])
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), console=console, transient=True
    )
    with progress:
        task = progress.add_task("loading", total=len(specs) + 3)
        policies = []
        for spec in specs:
            progress.update(task, description=f"loading {spec.label()}")
            policies.append(load_policy(spec, config.scorer))
            progress.advance(task)
        progress.update(task, description="statistics")
        report = build_report(policies, config.stats, config.title)
        progress.advance(task)
        progress.update(task, description="plots")
        plots = render_plots(report)
        progress.advance(task)
        progress.update(task, description="writing")
        files = write_report(report, plots, out_dir)
        progress.advance(task)
    _print_summary(report, files)
    return Exit.DONE


def _print_reveal(reveal: CampaignReveal, out_dir: Path) -> None:
    for line in reveal.lines():
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(f"reveal: {write_reveal(reveal, out_dir)}", markup=False, highlight=False, soft_wrap=True)


def _print_summary(report: Report, files: ReportFiles) -> None:
    table = Table(title=report.title)
    for col in ("policy", "scores", "n", "mean total [95 % t]", "partial success", "full success", "overrides"):
        table.add_column(col)
    for p in report.policies:
        for view in View:
            f = p.view(view)
            table.add_row(
                p.scores.name,
                p.label(view),
                str(f.total_t.n),
                fmt_estimate(f.total_t),
                fmt_rate(f.partial_success),
                fmt_rate(f.full_success),
                fmt_rate(p.overrides.cells) if view is View.EFFECTIVE else "",
            )
    console.print(table)
    if report.comparisons:
        diffs = Table(title="differences in mean total (first − second)")
        for col in ("pair", "scores", "difference [95 % Welch]", "permutation p"):
            diffs.add_column(col)
        for c in report.comparisons:
            p_text = fmt_p(c.total.test.p_value, c.total.test.exact)
            pair = f"{c.first} − {c.second}"
            diffs.add_row(pair, report.comparison_label(c), fmt_estimate(c.total.difference), p_text)
        console.print(diffs)
    for p in report.policies:
        if p.truth is not None:
            console.print(truth_line(p), markup=False, highlight=False, soft_wrap=True)
    for caveat in report.caveats:
        console.print(f"[yellow]note:[/yellow] {caveat}", highlight=False, soft_wrap=True)
    plot_dir = files.plots[0].parent if files.plots else files.html.parent
    console.print(f"report: {files.html}", highlight=False, soft_wrap=True)
    console.print(
        f"        {files.markdown}, {files.json}, {len(files.plots)} plots in {plot_dir}",
        highlight=False,
        soft_wrap=True,
    )


if __name__ == "__main__":
    sys.exit(main())
