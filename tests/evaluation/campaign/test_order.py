"""The campaign's order: balanced per round, mirrored, exactly the target, the same from the same seed."""

from collections import Counter

import pytest

from evaluation.campaign.order import Block, blind_labels, plan_rounds, planned_through

SEEDS = range(40)


@pytest.mark.parametrize("labels", [("A", "B"), ("A", "B", "C"), ("A", "B", "C", "D")])
@pytest.mark.parametrize(("target", "block"), [(8, 1), (10, 2), (5, 1), (7, 3), (1, 1), (12, 4)])
def test_every_label_gets_exactly_the_target_and_every_whole_round_prefix_is_balanced(labels, target, block):
    for seed in SEEDS:
        rounds = plan_rounds(labels, target, block, seed)
        assert {label: sum(r.episodes(label) for r in rounds) for label in labels} == dict.fromkeys(labels, target)
        for end in range(1, len(rounds) + 1):
            per_label = {sum(r.episodes(label) for r in rounds[:end]) for label in labels}
            assert len(per_label) == 1, (seed, end, rounds[:end])
        assert all(1 <= b.episodes <= block for r in rounds for b in r.blocks)


@pytest.mark.parametrize("seed", SEEDS)
def test_two_policies_run_abba_or_baab_with_the_start_drawn_per_round(seed):
    rounds = plan_rounds(("A", "B"), 8, 1, seed)
    assert ["".join(b.label for b in r.blocks) for r in rounds] == [
        "ABBA" if r.blocks[0].label == "A" else "BAAB" for r in rounds
    ]


def test_the_start_is_random_across_rounds_and_seeds():
    starts = Counter(r.blocks[0].label for seed in SEEDS for r in plan_rounds(("A", "B"), 20, 1, seed))
    assert 0.35 < starts["A"] / sum(starts.values()) < 0.65


def test_more_policies_mirror_latin_square_rows_so_each_takes_each_position_once_per_k_rounds():
    labels = ("A", "B", "C")
    for seed in SEEDS:
        rounds = plan_rounds(labels, 6, 1, seed)  # 3 rounds of 6 blocks
        firsts = [tuple(b.label for b in r.blocks[:3]) for r in rounds]
        for r, first in zip(rounds, firsts, strict=True):
            assert tuple(b.label for b in r.blocks[3:]) == first[::-1]
        for position in range(3):
            assert sorted(row[position] for row in firsts) == list(labels)


def test_the_same_seed_gives_the_same_order_and_another_seed_another():
    assert plan_rounds(("A", "B", "C"), 10, 2, 7) == plan_rounds(("A", "B", "C"), 10, 2, 7)
    orders = {plan_rounds(("A", "B"), 10, 1, seed) for seed in SEEDS}
    assert len(orders) > 10


def test_a_target_off_the_round_size_ends_with_a_shorter_mirrored_round():
    rounds = plan_rounds(("A", "B"), 5, 2, 0)  # one full round (2+2 each), then 1 each
    assert [b.episodes for b in rounds[0].blocks] == [2, 2, 2, 2]
    assert sorted(b.label for b in rounds[1].blocks) == ["A", "B"]
    assert all(b.episodes == 1 for b in rounds[1].blocks)


def test_planned_through_counts_a_labels_episodes_block_by_block():
    rounds = plan_rounds(("A", "B"), 4, 1, 0)
    flat = [b for r in rounds for b in r.blocks]
    assert planned_through(rounds, "A") == [sum(b.episodes for b in flat[: i + 1] if b.label == "A") for i in range(8)]
    assert planned_through(rounds, "A")[-1] == 4


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="each once"):
        plan_rounds(("A", "A"), 4, 1, 0)
    with pytest.raises(ValueError, match=">= 1"):
        plan_rounds(("A", "B"), 0, 1, 0)
    with pytest.raises(ValueError, match=r"1\.\.26"):
        blind_labels(27)
    assert blind_labels(3) == ("A", "B", "C")
    assert Block("A", 2).episodes == 2
