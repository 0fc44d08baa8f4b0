"""The live view for the length of a session: `with live_view_hooks(config.view, say) as hooks:`."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from robot.control_loop import StepHook
from robot.errors import ConfigError
from teleop.live_view.config import LiveViewConfig
from teleop.live_view.server import LiveView


@contextmanager
def live_view_hooks(config: LiveViewConfig, say: Callable[[str], None]) -> Iterator[list[StepHook]]:
    """The loop's step hooks for the live view (none when it is off); the page is served inside the block.

    Raises:
        ConfigError: the port cannot be listened on (taken, or not allowed).
    """
    if not config.enabled:
        yield []
        return
    view = LiveView(config)
    try:
        view.start()
    except OSError as e:
        view.stop()
        raise ConfigError(
            f"view.port={config.port}: cannot serve the live view on {config.host}:{config.port} ({e.strerror or e})."
            " Next: add --view.port=0 to take any free port"
        ) from e
    say(f"live view: {view.url} (open it in a browser)")
    try:
        yield [view.feed]
    finally:
        view.stop()
