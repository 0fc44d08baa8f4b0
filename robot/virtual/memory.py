"""An emulated STS3215's memory image: register values by name, and which addresses take writes.

The layout is the hardware's (`robot.feetech.sts3215`); these helpers read and write one named
register of a 256-byte image, little-endian, sign-magnitude where the register has a sign bit.
"""

from robot.feetech.sts3215 import REGISTERS, decode_sign_magnitude, encode_sign_magnitude

# Unnamed addresses are reserved and read-only registers ignore writes, as the firmware does.
WRITABLE_ADDRESSES = frozenset(
    addr for r in REGISTERS.values() if not r.readonly for addr in range(r.address, r.address + r.size)
)


def _registers_at() -> dict[int, tuple[str, ...]]:
    at: dict[int, tuple[str, ...]] = {}
    for name, register in REGISTERS.items():
        for addr in range(register.address, register.address + register.size):
            at[addr] = (*at.get(addr, ()), name)
    return at


# The registers each address belongs to: a write forgets only their cached values.
REGISTERS_AT: dict[int, tuple[str, ...]] = _registers_at()


def raw_value(image: bytearray, name: str) -> int:
    """The register's bytes as an unsigned integer."""
    r = REGISTERS[name]
    return int.from_bytes(image[r.address : r.address + r.size], "little")


def register_value(image: bytearray, name: str) -> int:
    """The register's value (sign-magnitude decoded where it has a sign bit)."""
    r = REGISTERS[name]
    raw = int.from_bytes(image[r.address : r.address + r.size], "little")
    # Inlined rather than `r.decode`: the emulator's hot path runs this for every register it reads.
    return decode_sign_magnitude(raw, r.sign_bit) if r.sign_bit is not None else raw


def put_value(image: bytearray, name: str, value: int) -> None:
    """Store `value` in the register, truncated to its size as the firmware would."""
    r = REGISTERS[name]
    raw = encode_sign_magnitude(value, r.sign_bit) if r.sign_bit is not None else value  # inlined: hot path
    raw &= (1 << (8 * r.size)) - 1
    image[r.address : r.address + r.size] = raw.to_bytes(r.size, "little")
