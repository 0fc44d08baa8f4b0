"""A command line the studio runs and shows: the argv it starts, and the text a user can paste."""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class CommandLine:
    """`argv[0]` is a console script of this project (so101-*); the rest its arguments."""

    argv: tuple[str, ...]

    @property
    def shown(self) -> str:
        """The line as a shell takes it: pasted into a terminal, it runs the same command."""
        return shlex.join(self.argv)
