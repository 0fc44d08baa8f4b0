"""The order a campaign runs its policies in: balanced, randomized, and the same again from the same seed.

    block    one label's run of `block` episodes: one so101-deploy call           A A
    round    blocks that give every label the same number of episodes, mirrored:
               2 labels:  A B | B A   or   B A | A B      the starting letter drawn per round
               k labels:  π | reversed(π), π a row of a randomly relabelled cyclic Latin square;
                          each run of k rounds uses every row once, in a random order

Every round gives each label the same number of episodes, so after any number of whole rounds the
counts are equal (the stopping rule looks only then). Mirroring within a round cancels a linear drift
over time (a cloth that wears, a battery, the light, the operator's attention) from the difference;
the Latin-square rows give each of k > 2 labels each position once per k rounds. When the target
is not a multiple of 2 x block, the last round is shorter: its first half gets ceil(r / 2) episodes per
label and its mirror floor(r / 2), so every label still gets exactly the target.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from dataclasses import dataclass

MAX_LABELS = len(string.ascii_uppercase)  # blind labels are single letters: A, B, ...


@dataclass(frozen=True)
class Block:
    """One label's consecutive episodes: one so101-deploy call."""

    label: str  # blind label, e.g. "A"
    episodes: int  # episodes in this block (>= 1)


@dataclass(frozen=True)
class Round:
    """Blocks that give every label the same number of episodes."""

    blocks: tuple[Block, ...]

    def episodes(self, label: str) -> int:
        """Episodes of `label` in this round."""
        return sum(b.episodes for b in self.blocks if b.label == label)


def blind_labels(count: int) -> tuple[str, ...]:
    """The blind labels of `count` policies: A, B, ...

    Raises:
        ValueError: count is outside 1..26.
    """
    if not 1 <= count <= MAX_LABELS:
        raise ValueError(f"{count} policies: a campaign takes 1..{MAX_LABELS}")
    return tuple(string.ascii_uppercase[:count])


def plan_rounds(labels: Sequence[str], episodes_per_policy: int, block: int, seed: int) -> tuple[Round, ...]:
    """The rounds that give each label exactly `episodes_per_policy` episodes in blocks of `block`.

    Raises:
        ValueError: no labels, a repeated label, or a count below 1.
    """
    if not labels or len(set(labels)) != len(labels):
        raise ValueError(f"labels {list(labels)}: need at least one, each once")
    if episodes_per_policy < 1 or block < 1:
        raise ValueError(f"episodes_per_policy={episodes_per_policy}, block={block}: each must be >= 1")
    rng = random.Random(seed)
    full, rest = divmod(episodes_per_policy, 2 * block)
    halves = [(block, block)] * full + ([((rest + 1) // 2, rest // 2)] if rest else [])
    rows = _rows(list(labels), len(halves), rng)
    return tuple(_round(row, first, second) for row, (first, second) in zip(rows, halves, strict=True))


def _rows(labels: list[str], count: int, rng: random.Random) -> list[list[str]]:
    """The first half's order of each round (its mirror is the second half)."""
    if len(labels) <= 2:
        return [rng.sample(labels, len(labels)) for _ in range(count)]
    base = rng.sample(labels, len(labels))  # a random relabelling of the cyclic Latin square
    square = [base[i:] + base[:i] for i in range(len(base))]
    rows: list[list[str]] = []
    while len(rows) < count:
        rows.extend(rng.sample(square, len(square)))  # each run of k rounds uses every row once
    return rows[:count]


def _round(row: list[str], first: int, second: int) -> Round:
    blocks = [Block(label, first) for label in row] + [Block(label, second) for label in reversed(row)]
    return Round(tuple(b for b in blocks if b.episodes > 0))


def planned_through(rounds: Sequence[Round], label: str) -> list[int]:
    """Per block of the whole plan (rounds flattened), the episodes of `label` planned up to and including it."""
    out, total = [], 0
    for r in rounds:
        for b in r.blocks:
            total += b.episodes if b.label == label else 0
            out.append(total)
    return out
