"""How the virtual rig's transport delivers replies: back-to-back ones together, a late one alone."""

from robot.virtual.bus import TRANSFER_GAP_S, Emission, as_transfers


def test_back_to_back_replies_leave_together_when_the_last_one_ends():
    replies = [Emission(1.000 + 0.00011 * i, bytes([i])) for i in range(6)]
    assert as_transfers(replies) == [Emission(replies[-1].t_s, bytes(range(6)))]


def test_a_reply_delayed_past_the_gap_is_its_own_transfer():
    early = [Emission(1.0, b"a"), Emission(1.0001, b"b")]
    late = Emission(1.0001 + TRANSFER_GAP_S + 0.010, b"c")
    assert as_transfers([late, *early]) == [Emission(1.0001, b"ab"), late]


def test_nothing_to_send_is_nothing():
    assert as_transfers([]) == []
