"""so101-judge --scorer=truth: store each episode's virtual ground truth, read from its quality card, as scorer "truth".

    selected episodes --sidecar check (teleop/dataset/sidecar.py)--> "ok": the card's truth (evaluation/truth.py)
        | "stale" (the card describes another episode): skipped, named | no card, or none in it: named
    every card is read before anything is written: no truth anywhere, a definition this code does not
    know, or a malformed truth refuses the run (TruthError, one line with the next step)
    --> one run of scorer "truth" (mode "offline"; no API call, no cost): one result per episode with
        the card's continuous scores (source "truth") and the card's truth in its motion_check_json

Episodes already stored under the same configuration, unchanged since, are skipped as a judge run
skips them (--run.force=true stores them again).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from evaluation.episode_score import CriterionScore, EpisodeScore
from evaluation.episode_source import DatasetSource, EpisodeRecord
from evaluation.errors import TruthError
from evaluation.judge.command_line import CommandLine
from evaluation.judge.config import JudgeCommandConfig, config_to_dict, judgment_hash
from evaluation.rubric import Rubric
from evaluation.store import EvaluationStore, RunRecord
from evaluation.truth import TRUTH_SCORER, CardTruth, card_truth
from evaluation.vocabulary import TRUTH_LABEL, ScoreSource
from teleop.dataset.sidecar import check_sidecar, read_quality


@dataclass(frozen=True)
class TruthCards:
    """What the selected episodes' quality cards say, before anything is stored."""

    found: tuple[tuple[EpisodeRecord, CardTruth], ...]  # episodes whose own card carries truth
    stale: tuple[tuple[int, str], ...]  # (episode, why): its card describes another episode; skipped
    without: tuple[int, ...]  # episodes without a card, or whose card carries no truth
    heuristic: str  # the command that scores the dataset offline instead (for the next steps)

    def lines(self) -> list[str]:
        """The episodes that get no truth, one line each, with the next step."""
        out = [
            f"skipped episode {i}: its quality card describes another episode ({why}), so its {TRUTH_LABEL} is not "
            f"this episode's; score it with {self.heuristic}"
            for i, why in self.stale
        ]
        if self.without:
            listed = ", ".join(str(i) for i in self.without)
            out.append(
                f"no {TRUTH_LABEL} for episode(s) {listed}: no quality card carries it (not recorded on the virtual "
                f"rig); score them with {self.heuristic}"
            )
        return out


@dataclass(frozen=True)
class TruthSummary:
    """What a truth run stored."""

    run_id: str | None  # None when nothing was stored (no run is recorded)
    stored: tuple[tuple[int, CardTruth], ...]  # (episode, its truth) stored by this run
    already: int  # stored before under this configuration, unchanged since: skipped
    cards: TruthCards  # the episodes left without truth

    @property
    def complete(self) -> bool:
        """Whether every selected episode has its truth stored (none stale, none without)."""
        return not self.cards.stale and not self.cards.without

    def lines(self) -> list[str]:
        """The run in words: each stored episode, each one left out, the counts."""
        out = [f"episode {i}: {_scores_text(t)}" for i, t in self.stored]
        out += self.cards.lines()
        run = f" (run {self.run_id[:12]})" if self.run_id else ""
        out.append(
            f"stored the {TRUTH_LABEL} of {len(self.stored)} episode(s) as scorer {TRUTH_SCORER!r}{run}, "
            f"{self.already} already stored; computed from the simulated cloth when recorded: a reference beside "
            f"the scores, never overridden; no API call, $0"
        )
        return out


def read_truth(source: DatasetSource, rubric: Rubric, config: JudgeCommandConfig, command: CommandLine) -> TruthCards:
    """Read the truth of the selected episodes from their quality cards (writes nothing).

    Raises:
        TruthError: No selected episode carries truth (and no card is stale), a card's truth has a definition
            this code does not know or is malformed, or it does not score every criterion of the rubric.
    """
    wanted = config.dataset.episodes
    episodes = [source.episode(i) for i in wanted] if wanted else list(source.episodes)
    heuristic = command.with_args("--scorer=heuristic", without=("--dry_run",))
    found, stale, without = [], [], []
    for ep in episodes:
        signals = source.signals(ep)
        check = check_sidecar(source.root, ep.index, signals.names, signals.state)
        if check.status == "stale":
            stale.append((ep.index, check.reason))
            continue
        truth = None
        if check.usable:
            try:
                truth = card_truth(read_quality(source.root, ep.index))
            except TruthError as e:
                raise TruthError(
                    f"episode {ep.index} of {source.root}: {e}; nothing was stored. Next: update so101 if the card "
                    f"is newer than this code, or score the dataset without truth: {heuristic}"
                ) from e
        if truth is None:
            without.append(ep.index)
            continue
        missing = [c for c in rubric.criterion_ids if c not in truth.scores]
        if missing:
            raise TruthError(
                f"episode {ep.index} of {source.root}: its {TRUTH_LABEL} ({truth.definition}) scores "
                f"{sorted(truth.scores)}, not the rubric's {missing}; nothing was stored. Next: store it against the "
                f"rubric it was made for: {command.with_args(without=('--rubric_path',))}"
            )
        found.append((ep, truth))
    if not found and not stale:
        which = f"none of episodes {list(wanted)}" if wanted else "no episode"
        raise TruthError(
            f"{which} of {source.root} carries {TRUTH_LABEL}: it was not recorded on the virtual rig; score it with "
            f"{heuristic} or {command.with_args('--scorer=llm', without=('--dry_run',))}"
        )
    return TruthCards(tuple(found), tuple(stale), tuple(without), heuristic)


def store_truth(
    cards: TruthCards, source: DatasetSource, rubric: Rubric, config: JudgeCommandConfig, store: EvaluationStore
) -> TruthSummary:
    """Store the truth of the episodes not stored yet: one run of scorer "truth", one result per episode."""
    config_hash = judgment_hash(config, rubric)
    done = set() if config.run.force else store.scored_episodes(config_hash, source.dataset_id)
    pending = [(ep, source.fingerprint(ep), t) for ep, t in cards.found]
    pending = [(ep, fp, t) for ep, fp, t in pending if (ep.index, fp) not in done]
    already = len(cards.found) - len(pending)
    if not pending:
        return TruthSummary(None, (), already, cards)
    run_id = uuid.uuid4().hex
    store.start_run(_run_record(run_id, config_hash, source, rubric, config, {t.definition for _, _, t in pending}))
    for ep, fingerprint, truth in pending:
        store.record_episode(
            run_id,
            config_hash,
            source.dataset_id,
            ep.index,
            fingerprint,
            _score(truth, rubric),
            dict(truth.saved),
            0,
            0.0,
        )
    store.add_run_event(run_id, "finished", {"stored": len(pending), "stale": len(cards.stale)})
    return TruthSummary(run_id, tuple((ep.index, t) for ep, _, t in pending), already, cards)


def _score(truth: CardTruth, rubric: Rubric) -> EpisodeScore:
    """The truth as an episode result: each criterion's continuous value, one "sample", never routed."""
    criteria = tuple(
        CriterionScore(c, ScoreSource.TRUTH, truth.scores[c], truth.scores[c], None, 1, 1, False, None, (), ())
        for c in rubric.criterion_ids
    )
    return EpisodeScore(criteria, "scored", ())


def _run_record(
    run_id: str,
    config_hash: str,
    source: DatasetSource,
    rubric: Rubric,
    config: JudgeCommandConfig,
    definitions: set[str],
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        scorer=TRUTH_SCORER,
        config_hash=config_hash,
        config=config_to_dict(config),
        model=",".join(sorted(definitions)),  # what computed the scores: the truth definition(s)
        prompt_hash="",
        rubric_version=rubric.version,
        rubric=rubric.to_dict(),
        dataset_id=source.dataset_id,
        dataset_root=str(source.root),
        dataset_revision=source.revision,
        tag=config.run.tag,
        mode="offline",
        forced=config.run.force,
        sdk_version="",
    )


def _scores_text(truth: CardTruth) -> str:
    scores = " ".join(f"{c}={v:.2f}" for c, v in truth.scores.items())
    seed = f", seed {truth.seed}" if truth.seed is not None else ""
    whole = "; of the whole recording (trimmed after recording)" if truth.whole_recording else ""
    return f"{scores} ({TRUTH_LABEL}, {truth.definition}{seed}{whole})"
