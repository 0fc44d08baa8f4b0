"""The command as the user typed it, to print back with flags changed: the next step as a pasteable command.

Example: `CommandLine("so101-judge", ("--dataset.root=d", "--run.max_estimated_cost_usd=5"))` with
`.with_args("--run.max_estimated_cost_usd=12")` gives `so101-judge --dataset.root=d --run.max_estimated_cost_usd=12`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class CommandLine:
    """A program and its arguments (`--section.field=value` flags)."""

    program: str  # what the user runs, e.g. "so101-judge"
    args: tuple[str, ...] = ()  # as given (after expanding short flags)

    def with_args(self, *args: str, without: tuple[str, ...] = ()) -> str:
        """The command, shell-quoted, with `args` set (each replaces a flag of the same name) and `without` dropped.

        `without` names flags (e.g. "--run.force"); `args` are whole flags (e.g. "--judge.samples=3").
        """
        drop = {_name(a) for a in args} | set(without)
        kept = [a for a in self.args if _name(a) not in drop]
        return shlex.join([self.program, *kept, *args])


def _name(arg: str) -> str:
    return arg.split("=", 1)[0]
