"""so101-demo's closing words: where everything it made is, and what to run next."""

from policies.demo.layout import DemoPaths


def summary(paths: DemoPaths, elapsed_s: float, judged_with_llm: bool) -> str:
    """Where everything is, and what to run next."""
    scorer = "the LLM judge" if judged_with_llm else "the heuristic scorer (no API key)"
    lines = [
        f"Done in {elapsed_s:.0f} s. Everything is under {paths.out}:",
        f"  rig file            {paths.rig_file}",
        f"  calibration         {paths.out / 'calibration'}",
        f"  demonstrations      {paths.demonstrations}  (LeRobot v3.0; quality cards in meta/so101/)",
        f"  dry-run report      {paths.replay_report / 'report.html'}",
        f"  tiny ACT checkpoint {paths.checkpoint}",
        f"  rollouts            {paths.rollouts}  (evaluation dataset; inference facts in meta/so101/)",
        f"  scores              {paths.rollouts.parent}/*.evaluation.sqlite  (by {scorer})",
    ]
    if not judged_with_llm:
        lines.append(f"  judge dry run       {paths.judge_dry_run}  (contact sheet, prompt, cost estimate)")
    lines += [
        f"  comparison report   {paths.report / 'report.html'}",
        f"  logs                {paths.logs}",
    ]
    return "\n".join(lines)


def next_steps(paths: DemoPaths) -> str:
    """The commands to run next (printed outside the panel, so they paste as they are)."""
    return (
        "Review and override the scores in your browser (Ctrl-C stops the server):\n"
        f"  so101-review --dataset.root={paths.rollouts}\n"
        "Real arms: copy hardware_configs/so101_bimanual.yaml, put in your ports, run so101-doctor on it."
    )
