"""Writing a curated dataset: into a folder of its own, never touching the source, whole or not at all.

    written = write_curation(source, out=Path("data/fold_clean"), repo_id="me/fold_clean", curation=plan)

Every writer works in `<out>.partial` and renames it to `out` once the dataset, its carried sidecars
and its journal are complete, so an interrupted edit leaves no half dataset under the chosen name
(the next run clears the partial folder). The lineage (`teleop/dataset/lineage.py`) says where each
episode came from, so the scores of whole episodes can follow them. The journal
(`teleop/dataset/journal.py`) makes the new dataset one so101-record can resume, as if it had
recorded it. The source is only read.
"""

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from teleop.dataset.curate import lerobot_tools as tools
from teleop.dataset.curate.errors import CurationError
from teleop.dataset.curate.plan import Curation, Kept, Span
from teleop.dataset.curate.sidecars import Carried, carry_sidecars
from teleop.dataset.journal import JournalEntry, episode_files, write_journal
from teleop.dataset.lineage import Origin, write_lineage

PARTIAL_SUFFIX = ".partial"


@dataclass(frozen=True)
class Written:
    """One new dataset a curation wrote."""

    root: Path
    episodes: int
    frames: int
    sidecars: Carried
    reencoded: bool  # every video was decoded and encoded again (a trim), not copied


def write_curation(
    source: tools.SourceFacts, out: Path, repo_id: str, curation: Curation, progress: tools.Progress = lambda *_: None
) -> Written:
    """The curated dataset at `out` (which must not exist).

    Raises:
        CurationError: `out` exists or is the source, or the source cannot be rewritten (image features).
    """
    partial = _partial(source.root, out)
    if curation.trims:
        tools.write_frames(source, partial, repo_id, curation, progress)
    else:
        tools.write_whole_episodes(source, partial, repo_id, curation)
    carried = carry_sidecars(source.root, partial, curation.kept, source.fps)
    write_lineage(partial, _origins(source.root, curation.kept))
    return _finish(partial, out, carried, reencoded=curation.trims)


def write_split(source: tools.SourceFacts, out: Path, splits: dict[str, list[int]]) -> list[Written]:
    """One new dataset per split, at out/<name>, whole episodes (ids: the source's, suffixed with the split's name).

    Raises:
        CurationError: `out` exists, a split is empty, or an episode is in two splits or not in the source.
    """
    seen: set[int] = set()
    for name, episodes in splits.items():
        if not episodes:
            raise CurationError(f"split {name!r} has no episodes; give it some, e.g. --split={name}:0-9")
        bad = sorted(set(episodes) - set(range(len(source.lengths))) | (set(episodes) & seen))
        if bad:
            raise CurationError(f"split {name!r}: episodes {bad} are not in the dataset or in another split")
        seen |= set(episodes)
    partial = _partial(source.root, out)
    roots = tools.split_episodes(source, partial, {name: sorted(episodes) for name, episodes in splits.items()})
    written = []
    for name, episodes in splits.items():
        kept = _whole(source, sorted(episodes))
        carried = carry_sidecars(source.root, roots[name], kept, source.fps)
        write_lineage(roots[name], _origins(source.root, kept))
        written.append(_finish(roots[name], out / name, carried, reencoded=False, journal_only=True))
    partial.rename(out)
    return written


def write_merge(sources: Sequence[tools.SourceFacts], out: Path, repo_id: str) -> Written:
    """Every episode of each source, in the order given, into one new dataset.

    Raises:
        CurationError: `out` exists, or the sources differ in rate or features (LeRobot's merge refuses them).
    """
    rates = {s.fps for s in sources}
    if len(rates) > 1:
        raise CurationError(f"the datasets run at {sorted(rates)} fps; merge datasets of one rate only")
    partial = _partial(sources[0].root, out)
    for other in sources[1:]:
        if other.root.resolve() == out.resolve():
            raise CurationError(
                f"{out} is one of the datasets to merge; name a new folder: --new_dataset.root={_free(out)}"
            )
    tools.merge_whole_datasets(list(sources), partial, repo_id)
    offset, carried, left, origins = 0, [], [], []
    for source in sources:
        kept = [Kept(offset + k.new_index, k.source_index, k.span, k.source_frames) for k in _whole(source)]
        origins += _origins(source.root, kept)
        result = carry_sidecars(source.root, partial, kept, source.fps)
        carried += result.carried
        left += [f"{source.root}: {line}" for line in result.left_behind]
        offset += len(source.lengths)
    write_lineage(partial, origins)
    return _finish(partial, out, Carried(tuple(carried), tuple(left)), reencoded=False)


def _origins(root: Path, kept: Sequence[Kept]) -> list[Origin]:
    """The lineage of the kept episodes: their source and frames (the scores of whole ones may follow them)."""
    source = str(Path(root).resolve())
    return [Origin(k.new_index, source, k.source_index, k.span.start, k.span.stop, k.source_frames) for k in kept]


def _whole(source: tools.SourceFacts, indices: Sequence[int] | None = None) -> list[Kept]:
    indices = range(len(source.lengths)) if indices is None else indices
    return [Kept(new, old, Span(0, source.lengths[old]), source.lengths[old]) for new, old in enumerate(indices)]


def _partial(source: Path, out: Path) -> Path:
    """The folder a writer works in, cleared of an earlier interrupted run; refuses an `out` that exists."""
    if out.resolve() == source.resolve():
        raise CurationError(f"{out} is the dataset edited; edits never write in place: --new_dataset.root={_free(out)}")
    if out.exists():
        raise CurationError(f"{out} exists; name a new folder for the edited dataset: --new_dataset.root={_free(out)}")
    partial = out.with_name(out.name + PARTIAL_SUFFIX)
    if partial.exists():
        shutil.rmtree(partial)  # an edit interrupted before its rename: never a dataset anyone uses
    partial.parent.mkdir(parents=True, exist_ok=True)
    return partial


def _free(out: Path) -> Path:
    """A sibling of `out` that does not exist yet (a next step that works when pasted)."""
    n = 2
    while out.with_name(f"{out.name}-{n}").exists():
        n += 1
    return out.with_name(f"{out.name}-{n}")


def _finish(partial: Path, out: Path, carried: Carried, *, reencoded: bool, journal_only: bool = False) -> Written:
    """Journal the dataset as committed, then give it its name."""
    facts = tools.read_source(partial, out.name)
    write_journal(partial, JournalEntry("committed", len(facts.lengths), episode_files(partial)))
    if not journal_only:
        partial.rename(out)
    return Written(out, len(facts.lengths), sum(facts.lengths), carried, reencoded)
