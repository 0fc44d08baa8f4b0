r"""so101-edit: curate a dataset into a new one: drop, trim, filter, split or merge episodes.

The dataset edited is only read; the new one is written beside it through LeRobot's own dataset
tools (whole episodes) or its writer (trimmed ones), our per-episode sidecars carried along,
renumbered and cut to match, and journaled so so101-record can resume it. The review page's
curation runs this command, so the page and a script give the same dataset for the same choices.

Examples:
    # Drop episodes 3 and 7 to 9:
    so101-edit --dataset.root=data/fold_cloth --drop=3,7-9 --new_dataset.root=data/fold_clean

    # Cut the idle head and tail of every episode (0.5 s of stillness kept), or of one, or exact frames:
    so101-edit --dataset.root=data/fold_cloth --trim=auto --new_dataset.root=data/fold_trimmed
    so101-edit --dataset.root=data/fold_cloth --trim=2:auto,5:30:400 --new_dataset.root=data/fold_trimmed

    # Keep what the quality cards vouch for; see what would be written first:
    so101-edit --dataset.root=data/fold_cloth --filter="dropped_frames == 0 and idle_percent < 30" \\
        --new_dataset.root=data/fold_good --dry_run=true

    # Split into train and validation sets (fractions or episode lists), or merge two sessions:
    so101-edit --dataset.root=data/fold_cloth --split=train:0.8,val:0.2 --new_dataset.root=data/fold_splits
    so101-edit --dataset.root=data/fold_monday --merge=data/fold_tuesday --new_dataset.root=data/fold_week

--filter fields: frames, duration_s, achieved_fps, dropped_frames, idle_percent, limit_hits,
skew_p99_ms, writer_dropped, verdict; clauses joined by `and`, each FIELD OP VALUE (== != < <= > >=).
A failed or interrupted edit leaves nothing under --new_dataset.root.
"""

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from robot.cli import UsageError, run_command
from robot.shell.parse import parse_options
from teleop.dataset.curate import lerobot_tools as tools
from teleop.dataset.curate.request import curation_from
from teleop.dataset.curate.write import Written, write_curation, write_merge, write_split
from teleop.dataset.format_check import format_problem

EXAMPLE = "so101-edit --dataset.root=<dataset> --drop=3 --new_dataset.root=<new dataset>"


@dataclass(frozen=True)
class EditDatasetConfig:
    """The dataset edited (only read)."""

    root: Path | None = None  # its folder (the one holding meta/info.json); required
    repo_id: str = ""  # its LeRobot id; "" uses local/<folder name>


@dataclass(frozen=True)
class NewDatasetConfig:
    """The dataset written."""

    root: Path | None = None  # its folder, which must not exist yet; required
    repo_id: str = ""  # its LeRobot id; "" uses local/<folder name>


@dataclass(frozen=True)
class EditConfig:
    """so101-edit: curate a dataset into a new one."""

    dataset: EditDatasetConfig = field(default_factory=EditDatasetConfig)
    new_dataset: NewDatasetConfig = field(default_factory=NewDatasetConfig)
    drop: tuple[int, ...] = ()  # episodes left out, e.g. --drop=3,7-9
    trim: tuple[str, ...] = ()  # EPISODE:START:STOP frames kept, EPISODE:auto, or auto (every episode's idle ends)
    filter: str = ""  # keep the episodes whose facts pass, e.g. "dropped_frames == 0 and idle_percent < 30"
    split: tuple[str, ...] = ()  # NAME:FRACTION or NAME:EPISODES, e.g. train:0.8,val:0.2 or train:0-39,val:40-49
    merge: tuple[Path, ...] = ()  # datasets whose episodes follow this one's, in order
    dry_run: bool = False  # print what the new dataset would hold; write nothing


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-edit."""
    args = sys.argv[1:] if argv is None else argv

    def body() -> int:
        config = parse_options(EditConfig, args, doc=__doc__, example=EXAMPLE)
        return _edit(config, args, Console(highlight=False, soft_wrap=True))

    return run_command(body, args=args)


def _edit(config: EditConfig, args: list[str], console: Console) -> int:
    source = _open(config.dataset.root, config.dataset.repo_id, "--dataset.root")
    if config.new_dataset.root is None:
        raise UsageError(
            f"--new_dataset.root is required: a new folder for the edited dataset, e.g. {_example(config)}"
        )
    out = config.new_dataset.root
    repo_id = config.new_dataset.repo_id or f"local/{out.name}"
    modes = [name for name, asked in (("--split", config.split), ("--merge", config.merge)) if asked]
    curating = bool(config.drop or config.trim or config.filter)
    if len(modes) > 1 or (modes and curating):
        raise UsageError(
            f"{' and '.join(modes + (['--drop/--trim/--filter'] if curating else []))} are separate "
            "edits; run so101-edit once for each, the second on the first's output"
        )
    if config.split:
        splits = _splits(config.split, len(source.lengths))
        if config.dry_run:
            for name, episodes in splits.items():
                console.print(f"would write {out / name}: {len(episodes)} episodes")
            return 0
        return _report(console, write_split(source, out, splits))
    if config.merge:
        others = [_open(path, "", "--merge") for path in config.merge]
        if config.dry_run:
            total = sum(len(s.lengths) for s in (source, *others))
            console.print(f"would merge {1 + len(others)} datasets into {total} episodes at {out}")
            return 0
        return _report(console, [write_merge([source, *others], out, repo_id)])
    if not curating:
        raise UsageError(f"nothing to edit: give --drop, --trim, --filter, --split or --merge, e.g. {_example(config)}")
    curation, notes = curation_from(source, config.drop, config.trim, config.filter)
    for line in [*notes, *curation.describe(source.fps)]:
        console.print(line)
    if config.dry_run:
        again = [a for a in args if not a.startswith("--dry_run")]
        console.print(f"dry run: nothing written. Write it: {shlex.join(['so101-edit', *again])}")
        return 0
    with Progress(
        *Progress.get_default_columns()[:1],
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("re-encoding the kept frames" if curation.trims else "copying episodes", total=None)
        written = write_curation(
            source, out, repo_id, curation, lambda done, total: bar.update(task, completed=done, total=total)
        )
    return _report(console, [written])


def _open(root: Path | None, repo_id: str, option: str) -> tools.SourceFacts:
    if root is None:
        raise UsageError(f"{option} is required: the dataset folder to edit, e.g. {EXAMPLE}")
    problem = format_problem(root)
    if problem is not None:
        raise UsageError(f"{option}={root}: {problem}")
    return tools.read_source(root, repo_id or f"local/{root.name}")


def _splits(items: tuple[str, ...], episodes: int) -> dict[str, list[int]]:
    """`train:0.8,val:0.2` or `train:0-39,val:40-49` as episode lists (fractions in episode order)."""
    splits: dict[str, list[int]] = {}
    start = 0
    for item in items:
        name, _, value = item.partition(":")
        try:
            if "." in value:
                count = round(float(value) * episodes)
                splits[name] = list(range(start, min(episodes, start + count)))
                start += count
            else:
                splits[name] = [i for part in value.split("+") for i in _range(part)]
        except ValueError:
            raise UsageError(
                f"--split={item}: give NAME:FRACTION or NAME:EPISODES, e.g. --split=train:0.8,val:0.2 "
                "or --split=train:0-39,val:40-49"
            ) from None
    return splits


def _range(part: str) -> range:
    first, _, last = part.partition("-")
    return range(int(first), int(last or first) + 1)


def _report(console: Console, written: list[Written]) -> int:
    for w in written:
        console.print(
            f"wrote {w.root}: {w.episodes} episodes, {w.frames} frames"
            + (", videos re-encoded" if w.reencoded else "")
            + f"; sidecars carried for {len(w.sidecars.carried)} episode(s)"
        )
        for line in w.sidecars.left_behind:
            console.print(f"  not carried (it describes another episode): {line}")
    console.print(
        "scores: the judge's and people's scores of whole episodes follow them (by content) the first time"
        " so101-review, so101-judge or so101-report opens the new dataset; trimmed episodes start unscored"
    )
    first = shlex.quote(str(written[0].root))
    console.print(f"Next: so101-review --dataset.root={first}   # browse it")
    console.print(f"      lerobot-train --dataset.repo_id=local/{written[0].root.name} --dataset.root={first} ...")
    return 0


def _example(config: EditConfig) -> str:
    root = config.dataset.root or Path("<dataset>")
    return f"--new_dataset.root={shlex.quote(str(root.with_name(root.name + '_edited')))}"
