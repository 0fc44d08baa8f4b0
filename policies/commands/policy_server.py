r"""Start LeRobot's async-inference policy server on the GPU machine, for `so101-deploy`'s remote engine.

On the GPU machine (needs `pip install 'lerobot[async]==0.6.1'`, and the checkpoint on its disk):

    python -m policies.commands.policy_server --port=8080
    # the same as LeRobot's own:  python -m lerobot.async_inference.policy_server --host=0.0.0.0 --port=8080

This checks that LeRobot's server and gRPC are installed and that the port is free, prints what to
run on the robot PC, then replaces itself with LeRobot's server (Ctrl-C stops it). LeRobot writes
its log to `logs/policy_server_<time>.log` in the working directory. The robot PC names the
checkpoint, and the server reads it from its own disk: give an absolute path (or a hub id).
The server serves one robot at a time and speaks pickle: keep it on a network you trust.
"""

import os
import socket
import sys
from dataclasses import dataclass

import draccus
from draccus.utils import DecodingError, ParsingError
from rich.console import Console

from robot.cli import run_command
from robot.config_checks import reject_non_finite
from robot.errors import ConfigError

SERVER_MODULE = "lerobot.async_inference.policy_server"


@dataclass(frozen=True)
class PolicyServerConfig:
    """Options of the policy server."""

    host: str = "0.0.0.0"  # address to listen on: 0.0.0.0 = every interface (the robot PC must reach it)
    port: int = 8080  # TCP port the robot PC connects to
    fps: int = 30  # the robot's control rate; LeRobot stamps chunk actions 1/fps apart, Hz
    obs_queue_timeout_s: float = 2.0  # how long a chunk request waits for an observation, seconds

    def __post_init__(self) -> None:
        reject_non_finite(self, "")
        if not 1 <= self.port <= 65535:
            raise ConfigError(f"port={self.port!r}: expected a TCP port in 1..65535")
        if not 0 < self.fps <= 1000:
            raise ConfigError(f"fps={self.fps!r}: expected frames per second in 1..1000")
        if not self.obs_queue_timeout_s > 0:
            raise ConfigError(f"obs_queue_timeout_s={self.obs_queue_timeout_s!r}: expected seconds > 0")


def server_argv(config: PolicyServerConfig) -> list[str]:
    """The command line of LeRobot's server for this config."""
    return [
        sys.executable,
        "-m",
        SERVER_MODULE,
        f"--host={config.host}",
        f"--port={config.port}",
        f"--fps={config.fps}",
        f"--obs_queue_timeout={config.obs_queue_timeout_s}",
    ]


def check_installed() -> None:
    """Raises ConfigError when LeRobot's async-inference extra (gRPC, protobuf) is missing."""
    try:
        import grpc  # noqa: F401
        from lerobot.transport import services_pb2_grpc  # noqa: F401
    except ImportError as e:
        raise ConfigError(
            f"LeRobot's policy server cannot start here ({e}); install it with: pip install 'lerobot[async]==0.6.1'"
        ) from e


def check_port_free(host: str, port: int) -> None:
    """Raises ConfigError when `host:port` cannot be listened on (in use, or not this machine's address)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ConfigError(f"host={host!r} is not an address of this machine ({e}); use 0.0.0.0 for all") from e
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as e:
            raise ConfigError(
                f"cannot listen on {host}:{port} ({e.strerror}); is a policy server already running? "
                "stop it, or pick another --port"
            ) from e


def robot_side_hint(config: PolicyServerConfig) -> str:
    """What to run on the robot PC to use this server."""
    host = socket.gethostname() if config.host in ("0.0.0.0", "::") else config.host
    return (
        f"so101-deploy --config_path=<your rig>.yaml --engine.kind=remote --engine.remote.host={host} "
        f"--engine.remote.port={config.port} --engine.remote.checkpoint=/absolute/path/on/this/machine "
        "--engine.remote.policy_type=act --engine.remote.actions_per_chunk=50"
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: check, announce, then exec LeRobot's policy server."""
    console = Console(stderr=True)

    def body() -> int:
        try:
            config = draccus.parse(PolicyServerConfig, args=sys.argv[1:] if argv is None else argv)
        except (DecodingError, ParsingError) as e:
            cause: BaseException | None = e
            while cause is not None and not isinstance(cause, ConfigError):
                cause = cause.__cause__ or cause.__context__
            raise cause or ConfigError(str(e).strip().splitlines()[0]) from e
        check_installed()
        check_port_free(config.host, config.port)
        console.print(f"LeRobot policy server on {config.host}:{config.port} (Ctrl-C stops it)", highlight=False)
        console.print(f"On the robot PC:\n  {robot_side_hint(config)}", highlight=False, soft_wrap=True)
        sys.stderr.flush()
        os.execv(sys.executable, server_argv(config))
        return 0  # not reached: execv replaces this process

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
