"""so101-demo's evaluation steps: every episode scored, then demonstrations and policy compared.

    so101-judge --scorer=truth on both (the virtual rig's ground truth, from each episode's card)
    ANTHROPIC_API_KEY set? -> so101-judge (the LLM judge) on both datasets
                    else   -> so101-judge --scorer=heuristic on both, and --dry_run=true of the LLM judge
    -> so101-report (demonstrations versus the tiny ACT, both scorers against the truth)

They read the datasets on disk only: the virtual rig is already stopped.
"""

import os

from policies.demo.runner import StepRunner


def evaluation_steps(runner: StepRunner) -> bool:
    """Score both datasets and compare them; returns whether the LLM judge scored them."""
    paths = runner.paths
    with_key = bool(os.environ.get("ANTHROPIC_API_KEY"))
    runner.say(
        "store the virtual rig's ground truth",
        "Every episode recorded on the virtual rig carries R1-R3 measured on the simulated cloth itself "
        "(docs/ground_truth.md). so101-judge's truth scorer stores them as their own scorer, labelled virtual "
        "ground truth: the report and the review page show them beside the judge and the people, and measure "
        "both against them.",
    )
    for root in (paths.demonstrations, paths.rollouts):
        runner.run("so101-judge", f"--dataset.root={root}", "--scorer=truth")
    if with_key:
        runner.say(
            "judge every episode with Claude",
            "ANTHROPIC_API_KEY is set: so101-judge sends labelled keyframes of the three views (placed at "
            "gripper and motion events) with the cloth-fold rubric to the model, stores every call in SQLite "
            "beside each dataset, and routes unsure episodes to human review.",
        )
        for root in (paths.demonstrations, paths.rollouts):
            runner.run("so101-judge", f"--dataset.root={root}")
    else:
        runner.say(
            "score every episode offline, and dry-run the LLM judge",
            "No ANTHROPIC_API_KEY: the heuristic scorer (so101-judge's --scorer=heuristic) scores what the joint "
            "data can show "
            "(did the arms move, did the grippers close and open), stored and labelled as 'heuristic'. "
            "--dry_run=true then shows what the LLM judge would be sent: a contact sheet of the chosen frames, "
            "the exact prompt and a cost estimate, with no API call.",
        )
        for root in (paths.demonstrations, paths.rollouts):
            runner.run("so101-judge", f"--dataset.root={root}", "--scorer=heuristic")
        runner.run(
            "so101-judge",
            f"--dataset.root={paths.rollouts}",
            "--dry_run=true",
            f"--dry.output_dir={paths.judge_dry_run}",
            "--dry.sheets=1",
        )
    runner.say(
        "compare the demonstrations with the policy",
        "so101-report: mean total reward with a small-sample interval, per-criterion means and success "
        "rates with Wilson intervals, the difference with a permutation test, a per-episode heatmap; "
        "one self-contained HTML page, PNG plots, Markdown and JSON.",
    )
    runner.run(
        "so101-report",
        f"--datasets=[{paths.demonstrations},{paths.rollouts}]",
        "--names=[demonstrations,tiny ACT]",
        f"--output_dir={paths.report}",
        "--title=Demonstrations versus a tiny ACT (virtual rig)",
    )
    return with_key
