"""A blocking gRPC client for LeRobot's async-inference policy server: handshake, then one chunk per call.

    client = PolicyServerClient("gpu-box", 8080)
    client.handshake(setup, connect_timeout_s=5, setup_timeout_s=300)   # Ready + SendPolicyInstructions
    data = client.request_chunk(observation, timeout_s=10)              # SendObservations + GetActions
    client.close()                                                       # cancels a call in progress

Every failure becomes a `RemotePolicyError` that names the server and the next step:
`ServerUnreachableError` when the server cannot be reached or answers too late (worth retrying),
`NoChunkError` when it answered a chunk request with nothing (it failed on the observation, or it
was restarted and has no policy loaded), and plain `RemotePolicyError` when it refused the setup.
gRPC's own retries are off: the engine decides when to retry (see remote.py).
"""

import logging
import threading
from collections.abc import Callable
from typing import Any

from policies.engines.remote_wire import observation_pieces, transport
from policies.errors import RemotePolicyError

logger = logging.getLogger(__name__)

# Our chunks are small, but a server with many cameras may send more than gRPC's 4 MiB default.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
RECONNECT_BACKOFF_MS = (200, 1000)  # first and longest pause between connection attempts, milliseconds


def server_command(port: int) -> str:
    """How to start the policy server on the GPU machine and reach it safely from the robot's.

    The server listens on the GPU machine's loopback only (it unpickles what it is sent), and an SSH
    tunnel carries the robot side's connection to it: the robot side then connects to its own
    127.0.0.1.
    """
    return (
        f"so101-policy-server --port={port}, and on this machine: ssh -N -L {port}:127.0.0.1:{port} <gpu-host> "
        f"(then --remote.host=127.0.0.1 --remote.port={port})"
    )


class ServerUnreachableError(RemotePolicyError):
    """The server is not listening, the network is down, or the server answered too late."""


class NoChunkError(RemotePolicyError):
    """The server answered a chunk request with no actions."""


class PolicyServerClient:
    """One connection to a policy server. Calls block; `close()` may be called from any thread."""

    def __init__(self, host: str, port: int) -> None:
        import grpc

        services_pb2, services_pb2_grpc = transport()

        self.address = f"{host}:{port}"
        self.port = port
        self._grpc = grpc
        self._messages = services_pb2
        self._channel = grpc.insecure_channel(
            self.address,
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.enable_retries", 0),
                # Come back quickly when a restarted server listens again (gRPC's default backoff grows to 120 s).
                ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_MS[0]),
                ("grpc.min_reconnect_backoff_ms", RECONNECT_BACKOFF_MS[0]),
                ("grpc.max_reconnect_backoff_ms", RECONNECT_BACKOFF_MS[1]),
            ],
        )
        self._stub = services_pb2_grpc.AsyncInferenceStub(self._channel)
        self._closed = threading.Event()

    def handshake(self, setup: bytes, *, connect_timeout_s: float, setup_timeout_s: float) -> None:
        """Introduce ourselves and have the server load the policy (blocks while it loads).

        Raises:
            ServerUnreachableError: nothing answers at the address within `connect_timeout_s`.
            RemotePolicyError: the server could not load the policy (its reason is in the message).
        """
        self._call("Ready", self._stub.Ready, self._messages.Empty(), connect_timeout_s)
        self._call(
            "SendPolicyInstructions",
            self._stub.SendPolicyInstructions,
            self._messages.PolicySetup(data=setup),
            setup_timeout_s,
        )

    def request_chunk(self, observation: bytes, *, timeout_s: float) -> bytes:
        """Send one observation and wait for the chunk computed from it; the reply's pickled bytes.

        Raises:
            ServerUnreachableError: the server cannot be reached, or took longer than `timeout_s`.
            NoChunkError: the server answered with no actions.
        """
        self._call("SendObservations", self._stub.SendObservations, observation_pieces(observation), timeout_s)
        reply = self._call("GetActions", self._stub.GetActions, self._messages.Empty(), timeout_s)
        if not reply.data:
            raise NoChunkError(
                f"the policy server at {self.address} answered with no actions: it failed on the observation "
                "(a camera or state the checkpoint does not have?) or it has no policy loaded; its log says why"
            )
        return reply.data

    def close(self) -> None:
        """Close the channel; a call in progress on another thread ends with a RemotePolicyError."""
        self._closed.set()
        self._channel.close()

    def _call(self, name: str, method: Callable[..., Any], request: Any, timeout_s: float) -> Any:
        grpc = self._grpc
        try:
            return method(request, timeout=timeout_s)
        except ValueError as e:  # gRPC refuses calls on a channel closed by close()
            if self._closed.is_set():
                raise RemotePolicyError(f"{name} to {self.address} cancelled: the engine is closing") from e
            raise
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None
            details = e.details() if hasattr(e, "details") else str(e)
            if self._closed.is_set() or code == grpc.StatusCode.CANCELLED:
                raise RemotePolicyError(f"{name} to {self.address} cancelled: the engine is closing") from e
            if code == grpc.StatusCode.UNAVAILABLE:
                raise ServerUnreachableError(
                    f"cannot reach the policy server at {self.address} ({details}). Next: on the GPU machine run "
                    f"{server_command(self.port)}"
                ) from e
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise ServerUnreachableError(
                    f"the policy server at {self.address} did not answer {name} within {timeout_s:g} s "
                    "(is the address right? is the server busy or still loading?)"
                ) from e
            raise RemotePolicyError(
                f"the policy server at {self.address} refused {name}: {details}. Check the checkpoint path (it "
                "is read on the server's machine), the policy type and the device, and the server's log"
            ) from e
