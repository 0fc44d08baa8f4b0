"""How so101-demo runs a step: announce it, then run a console script exactly as a user would type it."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from policies.demo.config import DemoConfig
from policies.demo.layout import DemoPaths

BIN = Path(sys.executable).parent  # the console scripts beside this interpreter


class StepRunner:
    """Announces the demo's steps and runs their commands; counts the steps. One thread."""

    def __init__(self, config: DemoConfig, console: Console) -> None:
        self.config = config
        self.console = console
        self.paths = DemoPaths.under(config.output_dir.resolve())
        self.rig_args = [f"--config_path={self.paths.rig_file}"]
        self.env = os.environ | {"HF_HUB_OFFLINE": "1"}
        self.step = 0

    def say(self, title: str, text: str) -> None:
        """Announce the next step."""
        self.step += 1
        self.console.print(Panel(text, title=f"step {self.step}: {title}", title_align="left"))

    def run(self, name: str, *args: str, log: str | None = None) -> None:
        """Run a console script as the user would; stop the demo if it fails.

        With `log`, the output goes to that file under logs/ (long tool logs); else to the terminal.

        Raises:
            SystemExit: the script failed (its text is the demo's one-line error).
        """
        command = [str(BIN / name), *args]
        pretty = " ".join(shlex.quote(a) for a in [name, *args])
        self.console.print(f"[dim]$ {escape(pretty)}[/dim]", soft_wrap=True)  # one line: it pastes as shown
        if log is None:
            result = subprocess.run(command, env=self.env)
        else:
            path = self.paths.logs / log
            with path.open("w") as stream:
                result = subprocess.run(command, env=self.env, stdout=stream, stderr=subprocess.STDOUT)
            self.console.print(f"  (output in {path})")
        if result.returncode != 0:
            where = f"; see {self.paths.logs / log}" if log else ""
            raise SystemExit(f"demo stopped: `{name}` exited with status {result.returncode}{where}")
