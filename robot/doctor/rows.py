"""A doctor check's verdict: one row of the table."""

from dataclasses import asdict, dataclass
from enum import StrEnum


class Status(StrEnum):
    """The verdict of one check."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class CheckRow:
    """One line of the doctor's table."""

    subject: str  # e.g. "left_follower", "disk"
    check: str  # e.g. "motors", "calibration"
    status: Status
    detail: str
    next_step: str = ""

    def as_dict(self) -> dict[str, str]:
        """JSON-friendly form."""
        return {k: str(v) for k, v in asdict(self).items()}
