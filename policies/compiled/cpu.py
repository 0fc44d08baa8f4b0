"""What this CPU computes natively, from the kernel's list of its flags (/proc/cpuinfo on Linux).

bf16 runs natively with AVX512_BF16 (e.g. AMD Zen 4, Intel Cooper Lake) or AMX (Intel Sapphire Rapids
and later); elsewhere OpenVINO would emulate it, slower than fp32.
"""

from dataclasses import dataclass
from pathlib import Path

BF16_FLAGS = ("avx512_bf16", "amx_bf16")
CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class CpuFacts:
    """The CPU's model name and flags, as the kernel lists them (empty where it cannot be read)."""

    name: str
    flags: frozenset[str]

    @property
    def native_bf16(self) -> bool:
        """Whether bf16 matrix work runs in hardware here."""
        return any(flag in self.flags for flag in BF16_FLAGS)


def read_cpu(cpuinfo: Path = CPUINFO) -> CpuFacts:
    """This machine's CPU facts (the first processor's: all cores of one machine share them)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return CpuFacts("unknown CPU", frozenset())
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor's block ends at the first blank line
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return CpuFacts(fields.get("model name", "unknown CPU"), frozenset(fields.get("flags", "").split()))
