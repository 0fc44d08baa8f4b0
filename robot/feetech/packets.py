"""The vendor SDK's packet handler, refusing replies of the wrong length.

The SDK takes the first status packet with the right motor ID as the answer. A late reply to an
earlier request (a position when the health block was asked for, or the other way round) has the
right ID and a valid checksum, so it is accepted: too short, it crashes the caller with an
IndexError; too long, its first bytes are silently read as the wrong register. Here a reply must
carry exactly the number of bytes asked for; anything else is skipped as stale, and if no fitting
reply comes before the timeout the read fails (and the caller retries within its deadline).
"""

import scservo_sdk as sdk
from scservo_sdk.protocol_packet_handler import protocol_packet_handler

_PARAMS = sdk.PKT_PARAMETER0
_LENGTH = sdk.PKT_LENGTH
_ID = sdk.PKT_ID
_ERROR = sdk.PKT_ERROR


def _fits(packet: list[int], motor_id: int, length: int) -> bool:
    return packet[_ID] == motor_id and packet[_LENGTH] - 2 == length


class CheckedPacketHandler(protocol_packet_handler):
    """`protocol_packet_handler` whose reads accept only replies of the requested length."""

    def readRx(self, port, scs_id, length):  # noqa: N802 - the SDK's signature
        """Read one motor's slot of a sync read (or a READ's reply)."""
        while True:
            packet, result = self.rxPacket(port)
            if result != sdk.COMM_SUCCESS:
                return [], result, 0
            if _fits(packet, scs_id, length):
                return list(packet[_PARAMS : _PARAMS + length]), result, packet[_ERROR]

    def readTxRx(self, port, scs_id, address, length):  # noqa: N802 - the SDK's signature
        """READ `length` bytes at `address`, skipping stale replies."""
        if scs_id >= sdk.BROADCAST_ID:
            return [], sdk.COMM_NOT_AVAILABLE, 0
        result = self.readTx(port, scs_id, address, length)
        if result != sdk.COMM_SUCCESS:
            return [], result, 0
        return self.readRx(port, scs_id, length)
