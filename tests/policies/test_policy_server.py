"""so101-policy-server: loopback by default, a non-loopback host only with the acknowledgement.

The listening test starts the console script, which execs LeRobot's real server (it loads no policy
until a robot connects), and reads the sockets that process listens on from /proc: the kernel's
view, not the server's log line.
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from policies.commands.policy_server import PolicyServerConfig, is_loopback, main, robot_side_hint
from robot.cli import parse_command

SCRIPT = Path(sys.executable).with_name("so101-policy-server")
LISTEN_TIMEOUT_S = 120.0  # LeRobot's server imports torch before it listens; slow on a loaded machine
_TCP_LISTEN = "0A"  # the LISTEN state in /proc/net/tcp


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _address(hex_address: str) -> str:
    """An address of /proc/net/tcp{,6} ("0100007F" = 127.0.0.1: 32-bit words in host byte order)."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    address = socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words)
    return address.removeprefix("::ffff:")  # an IPv6 socket bound to an IPv4 address (gRPC binds so)


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket process `pid` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _TCP_LISTEN and inode in inodes:
                address, port = local.split(":")
                found.add((_address(address), int(port, 16)))
    return found


@pytest.mark.slow
def test_with_no_host_the_server_listens_on_127_0_0_1_only(tmp_path):
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen([str(SCRIPT), f"--port={port}"], cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        listening: set[tuple[str, int]] = set()
        while not listening and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            listening = listening_addresses(server.pid)
        assert listening, f"no listening socket (exit status {server.poll()}):\n{log.read_text()[-3000:]}"
        assert listening == {("127.0.0.1", port)}
    finally:
        server.kill()
        server.wait(timeout=30)
    text = log.read_text()
    assert f"ssh -N -L {port}:127.0.0.1:{port} " in text
    assert "--remote.host=127.0.0.1" in text


def test_the_listening_check_sees_a_socket_on_every_interface(tmp_path):
    """The /proc reader above would notice 0.0.0.0: shown on a socket of this process."""
    with socket.socket() as everywhere:
        everywhere.bind(("0.0.0.0", 0))
        everywhere.listen()
        port = everywhere.getsockname()[1]
        assert ("0.0.0.0", port) in listening_addresses(os.getpid())


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10"])  # "::" never gets here: draccus reads it as YAML
def test_a_non_loopback_host_without_the_acknowledgement_exits_2(host, capsys):
    assert main([f"--host={host}", "--port=8765"]) == 2
    err = capsys.readouterr().err
    assert "unauthenticated pickle" in err
    assert "run any code on this machine" in err
    assert "ssh -N -L 8765:127.0.0.1:8765 " in err
    assert "--allow_remote_code_execution=true" in err
    assert "Traceback" not in err


def test_the_console_script_refuses_a_non_loopback_host_with_exit_2(tmp_path):
    done = subprocess.run([str(SCRIPT), "--host=0.0.0.0"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "unauthenticated pickle" in done.stderr
    assert "ssh -N -L 8080:127.0.0.1:8080 " in done.stderr
    assert not (tmp_path / "logs").exists(), "LeRobot's server must not have started"


def test_the_acknowledgement_lets_a_non_loopback_host_through_with_a_warning(capsys):
    with socket.socket() as busy:  # bound, not listening: the server's own port check stops it next
        busy.bind(("0.0.0.0", 0))
        port = busy.getsockname()[1]
        assert main(["--host=0.0.0.0", f"--port={port}", "--allow_remote_code_execution=true"]) == 1
    err = capsys.readouterr().err
    assert "warning: --host=0.0.0.0 lets anyone" in err
    assert f"cannot listen on 0.0.0.0:{port}" in err


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.1.1", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.10", False),
    ],
)
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback


def test_help_shows_the_examples(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "Examples:" in out
    assert "ssh -N -L 8080:127.0.0.1:8080 gpu-host" in out
    assert "--allow_remote_code_execution" in out


def test_the_robot_side_hint_is_a_deploy_command_line_that_parses():
    from policies.commands.deploy import DeployConfig

    hint = robot_side_hint(PolicyServerConfig(port=9123))
    tunnel, deploy = (line.strip() for line in hint.splitlines())
    assert tunnel.startswith("ssh -N -L 9123:127.0.0.1:9123 ")
    args = [arg for arg in deploy.split()[1:] if not arg.startswith("--config_path")]
    config = parse_command(DeployConfig, args)
    assert config.remote is not None
    assert (config.remote.host, config.remote.port) == ("127.0.0.1", 9123)
