"""The learning loop's picture: training curves beside each group's truth scores with their 95 % intervals."""

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.learning_stats import CRITERIA, TOTAL


def plot(result: dict[str, Any], path: Path) -> None:
    """Write `path` (PNG): loss against step per training, and R1-R3 and total per group."""
    fig, (curves, scores) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 1.4]})
    for name, curve in result["curves"].items():
        if curve:
            curves.plot([p["step"] for p in curve], [p["loss"] for p in curve], label=name)
    curves.set(xlabel="lerobot-train step", ylabel="training loss (ACT: L1 + KL)", yscale="log", title="Training")
    curves.legend()
    groups = list(result["groups"])
    keys = (*CRITERIA, TOTAL)
    width = 0.8 / len(groups)
    for g, name in enumerate(groups):
        xs, means, errors = [], [], [[], []]
        for k, key in enumerate(keys):
            e = result["groups"][name][key]
            scale = 1 / 3 if key == TOTAL else 1.0  # the total on the same 0..1 axis
            mean = (e["value"] or 0.0) * scale
            xs.append(k + (g - (len(groups) - 1) / 2) * width)
            means.append(mean)
            errors[0].append(mean - e["low"] * scale if e["low"] is not None else 0.0)
            errors[1].append(e["high"] * scale - mean if e["high"] is not None else 0.0)
        n = result["groups"][name][TOTAL]["n"]
        scores.bar(xs, means, width, yerr=errors, capsize=3, label=f"{name} (n={n})")
    scores.set_xticks(range(len(keys)), [*CRITERIA, "total / 3"])
    scores.set(ylim=(0, 1.05), ylabel="virtual ground truth, mean and 95 % interval", title="Scored by truth")
    scores.legend(fontsize=7, loc="lower left", framealpha=0.9)
    fig.suptitle(f"Learning loop on the virtual rig ({result['cpu']}, {result['cores']} cores)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
