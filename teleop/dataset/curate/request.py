"""From what a person asks (so101-edit's options, the review page's marks) to a `Curation`.

    curation, notes = curation_from(source, drop=[1, 4], trims=["2:auto", "3:15:170"], condition="verdict == keep")

`trims` items: `EPISODE:START:STOP` (frames kept, STOP not), `EPISODE:auto` (the idle head and tail
cut, trim_proposal.py) or `auto` (every kept episode so). The notes say what the condition left out
and why, one line each.
"""

from collections.abc import Sequence

from teleop.dataset.curate import lerobot_tools as tools
from teleop.dataset.curate.card_filter import card_facts, parse_condition
from teleop.dataset.curate.errors import CurationError
from teleop.dataset.curate.plan import Curation, Span, plan_curation
from teleop.dataset.curate.trim_proposal import propose_trim
from teleop.dataset.sidecar import check_all, read_quality

AUTO = "auto"


def curation_from(
    source: tools.SourceFacts, drop: Sequence[int] = (), trims: Sequence[str] = (), condition: str = ""
) -> tuple[Curation, list[str]]:
    """The curation asked for, and notes on what the condition left out.

    Raises:
        CurationError: an item of `trims` or `condition` that does not parse, or a plan that cannot be (plan.py).
    """
    asked = set(drop)
    filtered: set[int] = set()
    notes: list[str] = []
    if condition:
        failed, no_card = _filtered_out(source, condition, asked)
        if failed:
            notes.append(f"--filter left out {len(failed)} episode(s): {', '.join(map(str, failed))}")
        if no_card:
            notes.append(
                f"{len(no_card)} episode(s) have no quality card that still belongs to them (recorded or edited by "
                f"another tool), so they cannot pass a filter on it: {', '.join(map(str, no_card))}"
            )
        filtered = set(failed) | set(no_card)
    spans: dict[int, Span] = {}
    for item in trims:
        if item == AUTO:
            for index in range(len(source.lengths)):
                if index not in asked | filtered:
                    spans[index] = _auto(source, index)
            continue
        spans.update([_trim(source, item)])
    spans = {i: s for i, s in spans.items() if i not in filtered}  # a trim of an episode the filter left out is moot
    curation = plan_curation(source.lengths, sorted(asked | filtered), spans)
    return curation, notes


def _trim(source: tools.SourceFacts, item: str) -> tuple[int, Span]:
    parts = item.split(":")
    try:
        index = int(parts[0])
        if len(parts) == 2 and parts[1] == AUTO:
            return index, _auto(source, index)
        if len(parts) == 3:
            return index, Span(int(parts[1]), int(parts[2]))
    except ValueError:
        pass
    raise CurationError(
        f"--trim={item}: give EPISODE:START:STOP (frames kept), EPISODE:auto or auto; e.g. --trim=2:15:170,4:auto"
    )


def _auto(source: tools.SourceFacts, index: int) -> Span:
    if not 0 <= index < len(source.lengths):
        raise CurationError(f"--trim={index}:auto: the dataset has episodes 0-{len(source.lengths) - 1}")
    if not source.state_names:
        raise CurationError(
            f"--trim={index}:auto: {source.root} has no observation.state to find the motion in; "
            f"give the frames instead, e.g. --trim={index}:0:{source.lengths[index]}"
        )
    return Span(*propose_trim(tools.episode_states(source.root, index), source.state_names, source.fps))


def _filtered_out(source: tools.SourceFacts, text: str, drop: set[int]) -> tuple[list[int], list[int]]:
    """(episodes the condition fails, episodes it cannot judge for want of a card), not counting `drop`."""
    condition = parse_condition(text)
    usable = {c.index for c in check_all(source.root) if c.usable} if condition.needs_card else set()
    failed, no_card = [], []
    for index, frames in enumerate(source.lengths):
        if index in drop:
            continue
        if condition.needs_card and index not in usable:
            no_card.append(index)
            continue
        card = read_quality(source.root, index) if index in usable else None
        if not condition.passes(card_facts(frames, source.fps, card)):
            failed.append(index)
    return failed, no_card
