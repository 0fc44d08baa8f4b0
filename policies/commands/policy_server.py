r"""so101-policy-server: LeRobot's async-inference policy server on the GPU machine, for `so101-deploy`'s remote engine.

LeRobot's protocol is unauthenticated pickle: whoever can connect to the port can run any code on
this machine (the server unpickles what it is sent, and loads whatever checkpoint the client names).
So it listens on 127.0.0.1 only, and the robot PC reaches it through an SSH tunnel. Listening on
another address needs --allow_remote_code_execution=true, for a network where everyone who can
reach the port may run code here.

Examples:
    # On the GPU machine (needs `pip install 'lerobot[async]==0.6.1'`, and the checkpoint on its disk):
    so101-policy-server --port=8080

    # On the robot PC: forward its 127.0.0.1:8080 to the GPU machine's (leave it running), then deploy
    ssh -N -L 8080:127.0.0.1:8080 gpu-host
    so101-deploy --engine.kind=remote --remote.host=127.0.0.1 --remote.port=8080 \\
        --remote.checkpoint=/absolute/path/on/gpu-host --remote.policy_type=act

    # Only on a network you trust with code execution on this machine:
    so101-policy-server --host=0.0.0.0 --allow_remote_code_execution=true

This checks that LeRobot's server and gRPC are installed and that the port is free, prints what to
run on the robot PC, then replaces itself with LeRobot's server (Ctrl-C stops it). LeRobot writes
its log to `logs/policy_server_<time>.log` in the working directory. The robot PC names the
checkpoint, and the server reads it from its own disk: give an absolute path. The server serves one
robot at a time. The policy loads when the robot PC first connects, not at start.

Exit status: 0 (not reached: LeRobot's server takes over), 1 cannot start (not installed, port
busy), 2 the options are not allowed (a non-loopback --host without the acknowledgement).
"""

import ipaddress
import os
import socket
import sys
from dataclasses import dataclass

from rich.console import Console

from robot.cli import UsageError, run_command
from robot.config_checks import reject_non_finite
from robot.errors import ConfigError
from robot.shell.parse import parse_options

SERVER_MODULE = "lerobot.async_inference.policy_server"
LOOPBACK_HOST = "127.0.0.1"


@dataclass(frozen=True)
class PolicyServerConfig:
    """Options of so101-policy-server."""

    # Address to listen on. 127.0.0.1: this machine only (the robot PC comes in through an SSH tunnel);
    # anything else lets whoever reaches the port run code here, and needs allow_remote_code_execution
    host: str = LOOPBACK_HOST
    port: int = 8080  # TCP port the robot PC (or its SSH tunnel) connects to
    fps: int = 30  # the robot's control rate; LeRobot stamps chunk actions 1/fps apart, Hz
    obs_queue_timeout_s: float = 2.0  # how long a chunk request waits for an observation, seconds
    # Acknowledge that with a non-loopback host anyone who can connect runs code on this machine
    # (LeRobot's server unpickles what it receives, with no authentication)
    allow_remote_code_execution: bool = False

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


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (127.0.0.0/8, ::1), so only this machine can connect.

    Raises:
        ConfigError: `host` does not resolve.
    """
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass  # a name, such as localhost: what it resolves to decides
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise ConfigError(f"host={host!r} is not an address of this machine ({e}); keep the default 127.0.0.1") from e
    return all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def tunnel_command(port: int) -> str:
    """The SSH command, run on the robot PC, that brings this machine's 127.0.0.1:`port` to the robot PC's."""
    return f"ssh -N -L {port}:{LOOPBACK_HOST}:{port} {socket.gethostname()}"


def check_exposure(config: PolicyServerConfig) -> str | None:
    """Refuse a non-loopback host unless acknowledged; returns the warning to print when it is.

    Raises:
        UsageError: a host other machines can reach, without allow_remote_code_execution=true.
    """
    if is_loopback(config.host):
        return None
    risk = (
        f"--host={config.host} lets anyone who can reach port {config.port} run any code on this machine"
        " (LeRobot's policy server takes unauthenticated pickle)"
    )
    if not config.allow_remote_code_execution:
        raise UsageError(
            f"{risk}; keep the default host and, on the robot PC, run `{tunnel_command(config.port)}` then deploy"
            f" with --remote.host={LOOPBACK_HOST} (only on a network you trust with that: add"
            " --allow_remote_code_execution=true)"
        )
    return f"warning: {risk}; allowed by --allow_remote_code_execution=true"


def check_installed() -> None:
    """Raises ConfigError when LeRobot's async-inference extra (gRPC, protobuf) is missing."""
    try:
        import grpc  # noqa: F401

        from policies.engines.remote_wire import transport

        transport()
    except ImportError as e:
        raise ConfigError(
            f"LeRobot's policy server cannot start here ({e}); install it with: pip install 'lerobot[async]==0.6.1'"
        ) from e


def check_port_free(host: str, port: int) -> None:
    """Raises ConfigError when `host:port` cannot be listened on (in use, or not this machine's address)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ConfigError(f"host={host!r} is not an address of this machine ({e}); keep the default 127.0.0.1") from e
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
    """What to run on the robot PC to use this server (through an SSH tunnel when it listens on loopback)."""
    deploy = (
        "so101-deploy --config_path=hardware_configs/so101_bimanual.yaml --engine.kind=remote --remote.host={host} "
        f"--remote.port={config.port} --remote.checkpoint=/absolute/path/on/this/machine "
        "--remote.policy_type=act --remote.actions_per_chunk=50"
    )
    if is_loopback(config.host):
        return f"{tunnel_command(config.port)}   (leave it running)\n  {deploy.format(host=LOOPBACK_HOST)}"
    host = socket.gethostname() if config.host in ("0.0.0.0", "::") else config.host
    return deploy.format(host=host)


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-policy-server: check, announce, then exec LeRobot's policy server."""
    args = sys.argv[1:] if argv is None else argv
    console = Console(stderr=True)

    def body() -> int:
        config = parse_options(PolicyServerConfig, args, doc=__doc__, example="so101-policy-server --port=8080")
        warning = check_exposure(config)
        if warning is not None:
            console.print(warning, style="bold red", highlight=False, soft_wrap=True)
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
