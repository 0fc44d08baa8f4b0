"""Configuration of `so101-report`: which policies to compare, where to write, and the statistics' knobs.

A policy is a selection of judged episodes in an evaluation store: a dataset (its store sits beside
it by default), a tag given to `so101-judge --run.tag=...`, or both. On the command line,
`--datasets=[a,b]` or `--tags=[x,y]` give one policy each; a YAML file (`--options_path`) can list
`policies:` in full.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.errors import ConfigError
from evaluation.report.permutation import MAX_EXACT, N_RESAMPLES
from evaluation.store import default_store_path

SCORERS = ("auto", "llm", "heuristic")


@dataclass(frozen=True)
class PolicySpec:
    """One policy: where its judged episodes are."""

    name: str = ""  # label in the report; "" uses the tag, else the dataset folder name
    dataset_root: Path | None = None  # LeRobot dataset folder that was judged; its store sits beside it
    dataset_id: str = ""  # dataset name in the store; "" uses the folder name of dataset_root (or any dataset)
    store_path: Path | None = None  # evaluation store (SQLite); None: beside dataset_root
    tag: str = ""  # only runs with this tag (so101-judge --run.tag); "" uses every run of the dataset

    def resolved_store(self) -> Path:
        """The store file of this policy.

        Raises:
            ConfigError: Neither a store nor a dataset folder was given.
        """
        if self.store_path is not None:
            return self.store_path.expanduser()
        if self.dataset_root is None:
            raise ConfigError(
                f"policy {self.name or self.tag!r} names no store: pass --store_path=<file.sqlite> or a dataset folder"
            )
        return default_store_path(self.dataset_root.expanduser().resolve())

    def resolved_dataset_id(self) -> str:
        """The dataset name to select ("" selects every dataset in the store)."""
        if self.dataset_id:
            return self.dataset_id
        return "" if self.dataset_root is None else self.dataset_root.expanduser().resolve().name

    def label(self) -> str:
        """The policy's label in the report."""
        return self.name or self.tag or self.resolved_dataset_id() or "policy"


@dataclass(frozen=True)
class StatsConfig:
    """Knobs of the statistics (every interval is 95 %)."""

    seed: int = 0  # random seed of the BCa bootstrap and Monte Carlo permutation tests (same seed, same report)
    bootstrap_resamples: int = 9999  # resamples of the BCa interval of the mean total
    permutation_resamples: int = N_RESAMPLES  # random splits when a permutation test is too large to enumerate
    max_exact_permutations: int = MAX_EXACT  # enumerate every split up to this many (exact p-value)

    def __post_init__(self) -> None:
        """Validate the fields."""
        if self.seed < 0:
            raise ConfigError(f"stats.seed={self.seed}; allowed: an integer >= 0")
        if self.bootstrap_resamples < 100 or self.permutation_resamples < 100:
            raise ConfigError(
                f"stats.bootstrap_resamples={self.bootstrap_resamples} and stats.permutation_resamples="
                f"{self.permutation_resamples} must be >= 100 (the defaults are 9999 and {N_RESAMPLES})"
            )
        if self.max_exact_permutations < 1:
            raise ConfigError(f"stats.max_exact_permutations={self.max_exact_permutations}; allowed: >= 1")


@dataclass(frozen=True)
class CampaignReportOptions:
    """A blind so101-campaign to reveal (evaluation/report/campaign.py)."""

    root: Path | None = None  # a so101-campaign folder: reveal which checkpoint each label was, with the difference


@dataclass(frozen=True)
class ReportCommandConfig:
    """so101-report: compare policies from their judged episodes (statistics, plots, HTML, Markdown, JSON)."""

    datasets: tuple[Path, ...] = ()  # one policy per dataset folder, e.g. [outputs/datasets/fold_smolvla,...]
    tags: tuple[str, ...] = ()  # one policy per run tag, e.g. [smolvla-v2,act-v1] (with --store_path or 1 dataset)
    names: tuple[str, ...] = ()  # labels of the --datasets / --tags policies, in order; empty: tags or folder names
    store_path: Path | None = None  # store for --tags (and for --datasets instead of the one beside each)
    policies: tuple[PolicySpec, ...] = ()  # policies given in full (YAML config file), after the ones above
    scorer: str = "auto"  # "llm", "heuristic", or "auto": the LLM judge's results when any, else the heuristic's
    output_dir: Path | None = None  # folder for report.html/.md/.json and plots/; None: outputs/reports/<names>
    title: str = "Policy comparison"  # heading of the report
    stats: StatsConfig = field(default_factory=StatsConfig)
    # A blind so101-campaign to reveal (its labels' checkpoints and the difference); alone, or beside --datasets
    campaign: CampaignReportOptions = field(default_factory=CampaignReportOptions)

    def __post_init__(self) -> None:
        """Validate the fields that span sections."""
        if self.scorer not in SCORERS:
            raise ConfigError(f"scorer={self.scorer!r}; allowed: {list(SCORERS)}")
        if self.datasets and self.tags and len(self.datasets) not in (1, len(self.tags)):
            raise ConfigError(
                f"--datasets has {len(self.datasets)} and --tags {len(self.tags)} entries: give one dataset for all "
                f"tags, or one dataset per tag"
            )
        if self.names and len(self.names) != len(self.shorthand_policies()):
            raise ConfigError(
                f"--names has {len(self.names)} entries for {len(self.shorthand_policies())} policies "
                f"from --datasets/--tags"
            )
        if not self.datasets and not self.tags and not self.policies and self.campaign.root is None:
            raise ConfigError(
                "no policy given: pass --datasets=[<dataset folder>,...] (store beside each), "
                "--tags=[<tag>,...] --store_path=<file.sqlite>, policies: in an --options_path file, "
                "or --campaign.root=<so101-campaign folder>"
            )

    def shorthand_policies(self) -> list[PolicySpec]:
        """The policies given by --datasets and --tags (without --names)."""
        if self.tags:
            roots = list(self.datasets) * len(self.tags) if len(self.datasets) == 1 else list(self.datasets)
            roots = roots or [None] * len(self.tags)
            return [
                PolicySpec(dataset_root=root, store_path=self.store_path, tag=tag)
                for root, tag in zip(roots, self.tags, strict=True)
            ]
        return [PolicySpec(dataset_root=root, store_path=self.store_path) for root in self.datasets]

    def all_policies(self) -> list[PolicySpec]:
        """Every policy in report order, with labels.

        Raises:
            ConfigError: Two policies share a label.
        """
        shorthand = self.shorthand_policies()
        names = self.names or ("",) * len(shorthand)
        named = [
            PolicySpec(name, p.dataset_root, p.dataset_id, p.store_path, p.tag)
            for p, name in zip(shorthand, names, strict=True)
        ]
        specs = named + list(self.policies)
        labels = [p.label() for p in specs]
        duplicates = sorted({x for x in labels if labels.count(x) > 1})
        if duplicates:
            raise ConfigError(f"several policies are labelled {duplicates}: give each a name with --names=[...]")
        return specs

    def resolved_output_dir(self, labels: list[str]) -> Path:
        """The output folder (default: outputs/reports/<label>-vs-<label>)."""
        if self.output_dir is not None:
            return self.output_dir.expanduser()
        slug = "-vs-".join(re.sub(r"[^A-Za-z0-9._-]+", "_", x) for x in labels)[:120] or "report"
        return Path("outputs") / "reports" / slug
