"""so101-demo's step list, in order: each step a real console script against the virtual rig.

    prepare the folder -> [virtual rig up: rig steps -> policy steps] -> evaluation steps (offline)

A failed step stops the demo there (the rig is stopped on the way out).
"""

from policies.demo.evaluation_steps import evaluation_steps
from policies.demo.policy_steps import policy_steps
from policies.demo.rig_steps import hardware_steps, prepare_folder, virtual_rig
from policies.demo.runner import StepRunner


def run_steps(runner: StepRunner) -> bool:
    """Run every step of the demo (blocking); returns whether the LLM judge scored the episodes.

    Raises:
        SystemExit: a step failed (its text says which and where its log is).
    """
    prepare_folder(runner)
    with virtual_rig(runner) as rig:
        hardware_steps(runner, rig)
        policy_steps(runner)
    return evaluation_steps(runner)
