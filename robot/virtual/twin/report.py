"""The fit's fidelity table on the terminal: per joint, the real arm against its emulation before and after."""

import math

from rich.console import Console
from rich.table import Table

from robot.virtual.twin.fidelity import SAG_JOINTS


def _sag(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:+.2f}"


def print_fidelity(console: Console, arm: str, before: dict[str, dict], after: dict[str, dict]) -> None:
    """One row a joint: lag (frames), mean tracking error (deg, and its ratio to the real arm's), sag, targets."""
    table = Table(title=f"{arm}: held-out episodes, real / emulated before the fit / after", title_justify="left")
    for name in ("joint", "lag, frames", "mean error, deg", "error ratio", "sag, deg", "targets after"):
        table.add_column(name)
    for joint, row in after.items():
        was = before[joint]
        real, old, new = row["real"], was["emulated"], row["emulated"]
        sag = (
            f"{_sag(real['sag_deg'])} / {_sag(old['sag_deg'])} / {_sag(new['sag_deg'])}" if joint in SAG_JOINTS else "-"
        )
        missed = [name for name, met in row["targets"].items() if not met]
        verdict = "all met" if not missed else "missed: " + ", ".join(missed)
        if "not_judged" in row:
            verdict = "not judged: " + row["not_judged"]
        table.add_row(
            joint,
            f"{real['lag_frames']} / {old['lag_frames']} / {new['lag_frames']}",
            f"{real['err_mean_deg']:.2f} / {old['err_mean_deg']:.2f} / {new['err_mean_deg']:.2f}",
            f"{was['error_ratio']:.2f} -> {row['error_ratio']:.2f}",
            sag,
            verdict,
        )
    console.print(table)
