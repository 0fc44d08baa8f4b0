"""The remote engine against LeRobot's real async-inference policy server, on loopback.

The server runs in a child process (started through `python -m policies.commands.policy_server`,
which execs LeRobot's `lerobot.async_inference.policy_server`) and serves the tiny ACT checkpoint.
The wire format and the tick queue, without a server, are in test_remote_wire.py.
"""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from policies.engine import PolicyInput
from policies.engines.blend import BlendMode
from policies.engines.remote import RemoteEngine, RemoteEngineConfig
from policies.engines.remote_wire import (
    rig_lerobot_features,
)
from policies.errors import PolicyError, RemotePolicyError
from policies.testing.tiny_policies import TEST_CAMERAS, write_tiny_act
from robot.errors import ConfigError
from robot.joints import BIMANUAL_KEYS, Side
from tests.support.checkpoints import TINY_ACT_CHUNK
from tests.support.policy_inputs import synthetic_input

REPO = Path(__file__).resolve().parents[2]
SERVER_START_TIMEOUT_S = 120.0  # importing LeRobot on a busy 2-core machine can take a while
EVENT_TIMEOUT_S = 60.0  # generous waits for things that happen in well under a second normally


# --- helpers --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PolicyServerProcess:
    """LeRobot's policy server in a child process, started through our wrapper command."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.workdir = workdir
        self.log = workdir / f"server_{port}_{time.monotonic_ns()}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> "PolicyServerProcess":
        import grpc

        env = dict(os.environ, PYTHONPATH=str(REPO))
        command = [sys.executable, "-m", "policies.commands.policy_server", "--host=127.0.0.1", f"--port={self.port}"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
        channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        try:
            grpc.channel_ready_future(channel).result(timeout=SERVER_START_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            self.stop()
            pytest.fail(f"the policy server did not start within {SERVER_START_TIMEOUT_S} s:\n{self.log.read_text()}")
        finally:
            channel.close()
        return self

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.kill()
        self.process.wait(timeout=30)
        self.process = None


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory) -> Iterator[PolicyServerProcess]:
    server = PolicyServerProcess(free_port(), tmp_path_factory.mktemp("policy_server")).start()
    yield server
    server.stop()


def remote_config(port: int, checkpoint: Path, **overrides) -> RemoteEngineConfig:
    options = dict(
        host="127.0.0.1",
        port=port,
        policy_type="act",
        checkpoint=str(checkpoint),
        policy_device="cpu",
        actions_per_chunk=TINY_ACT_CHUNK,
        request_timeout_s=30.0,
    )
    return RemoteEngineConfig(**{**options, **overrides})


def tick_until(engine: RemoteEngine, condition, *, start_tick: int = 0, fps: float = 30.0) -> int:
    """Call next_action at about `fps` until condition(engine) holds; returns the next tick index."""
    tick = start_tick
    deadline = time.monotonic() + EVENT_TIMEOUT_S
    while not condition(engine):
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {EVENT_TIMEOUT_S} s; stats {engine.stats()}")
        engine.next_action(synthetic_input(tick), tick)
        tick += 1
        time.sleep(1 / fps)
    return tick


# --- configuration and unreachable server -----------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"port": 0}, "remote.port"),
        ({"policy_type": "actt"}, "remote.policy_type"),
        ({"checkpoint": ""}, "remote.checkpoint"),
        ({"checkpoint": "lerobot/smolvla_base"}, "remote.checkpoint='lerobot/smolvla_base'.*hf download"),
        ({"checkpoint": "outputs/train/act"}, "remote.checkpoint.*absolute path"),
        ({"policy_device": "gpu"}, "remote.policy_device"),
        ({"refill_threshold": 50}, "remote.refill_threshold"),
        ({"request_timeout_s": 0}, "remote.request_timeout_s"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(overrides, field):
    with pytest.raises(ConfigError, match=field):
        RemoteEngineConfig(**{"checkpoint": "/ckpt", **overrides})


def test_an_unreachable_server_fails_at_once_naming_the_address_and_how_to_start_it():
    port = free_port()  # nothing listens there
    engine = RemoteEngine(remote_config(port, Path("/ckpt"), connect_timeout_s=30.0), TEST_CAMERAS)
    with pytest.raises(RemotePolicyError) as caught:
        engine.start()
    message = str(caught.value)
    # A refused connection ends the wait (gRPC's UNAVAILABLE), not the 30 s timeout (DEADLINE_EXCEEDED).
    assert "cannot reach the policy server" in message
    assert "did not answer" not in message
    assert f"127.0.0.1:{port}" in message
    assert f"Next: on the GPU machine run so101-policy-server --port={port}" in message
    assert f"ssh -N -L {port}:127.0.0.1:{port} <gpu-host>" in message  # reached through a tunnel, never 0.0.0.0
    assert "0.0.0.0" not in message
    assert isinstance(caught.value, PolicyError)
    engine.close()


def test_the_server_command_refuses_a_busy_port_in_one_line(capsys):
    from policies.commands.policy_server import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["--host=127.0.0.1", f"--port={port}"]) == 1
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert "Traceback" not in err
    assert main(["--port=70000"]) == 2  # a value no port can have: usage, as in every command
    assert "port=70000" in capsys.readouterr().err


def test_the_server_command_line_is_one_lerobots_server_parses():
    import draccus
    from lerobot.async_inference.configs import PolicyServerConfig as LeRobotServerConfig

    from policies.commands.policy_server import SERVER_MODULE, PolicyServerConfig, server_argv

    argv = server_argv(PolicyServerConfig(host="127.0.0.1", port=9123, fps=15, obs_queue_timeout_s=1.5))
    assert argv[1:3] == ["-m", SERVER_MODULE]
    parsed = draccus.parse(LeRobotServerConfig, args=argv[3:])
    assert (parsed.host, parsed.port, parsed.fps, parsed.obs_queue_timeout) == ("127.0.0.1", 9123, 15, 1.5)


# --- against LeRobot's server -----------------------------------------------------------------


@pytest.mark.slow
def test_a_checkpoint_the_server_cannot_load_is_a_clear_error(policy_server, tmp_path):
    engine = RemoteEngine(remote_config(policy_server.port, tmp_path / "missing"), TEST_CAMERAS)
    with pytest.raises(RemotePolicyError, match="refused SendPolicyInstructions") as caught:
        engine.start()
    assert "missing" in str(caught.value)
    engine.close()


def test_a_primed_episode_starts_with_the_chunk_of_its_first_observation(policy_server, tiny_act_dir):
    engine = RemoteEngine(remote_config(policy_server.port, tiny_act_dir), TEST_CAMERAS)
    try:
        engine.start()
        engine.prime(synthetic_input(0))
        first = engine.next_action(synthetic_input(0), 0)
        assert first is not None
        assert (first.chunk_id, first.index_in_chunk, first.queue_depth) == (0, 0, TINY_ACT_CHUNK - 1)
        engine.reset()  # a new episode: the old plan is gone
        assert engine.next_action(synthetic_input(0), 0) is None
        assert engine.stats().starved_ticks == 1
    finally:
        engine.close()


def tick_renamed(engine: RemoteEngine) -> None:
    """Tick with the overhead camera called `top` until the engine raises (or the wait runs out)."""
    deadline = time.monotonic() + EVENT_TIMEOUT_S
    for tick in range(10**6):
        inputs = synthetic_input(tick)
        images = {("top" if k == "overhead" else k): v for k, v in inputs.images.items()}
        assert engine.next_action(PolicyInput(inputs.state, images, inputs.task, 0.0), tick) is None
        assert time.monotonic() < deadline, "the engine kept going on a server that sends nothing"
        time.sleep(1 / 30)


def test_a_camera_the_checkpoint_lacks_stops_the_engine_with_a_remote_error(policy_server, tiny_act_dir):
    renamed = tuple(("top" if name == "overhead" else name, h, w) for name, h, w in TEST_CAMERAS)
    engine = RemoteEngine(remote_config(policy_server.port, tiny_act_dir), renamed)
    engine.start()
    try:
        with pytest.raises(RemotePolicyError, match="no actions"):
            tick_renamed(engine)
    finally:
        engine.close()


class StepLog:
    """Every step of the loop with the source's inference facts for it; stops the loop after `served` actions."""

    def __init__(self, source, served: int) -> None:
        self.source = source
        self.served = served
        self.steps = []
        self.facts = []
        self.stop = lambda: None

    def on_step(self, step) -> None:
        self.steps.append(step)
        self.facts.append(self.source.last_facts)
        if sum(not f.starved for f in self.facts) >= self.served:
            self.stop()


@pytest.fixture
def camera_rig(tmp_path):
    from robot.cameras.config import CaptureConfig, VirtualCameraConfig
    from robot.config import CalibrationConfig, RigConfig
    from robot.joints import CameraRole
    from robot.rig import BimanualRig
    from robot.virtual.config import TimingMode, VirtualRigConfig
    from robot.virtual.inprocess import in_process_ports
    from robot.virtual.precalibrated import write_calibration_files
    from robot.virtual.rig_model import VirtualRigModel

    model = VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0))
    write_calibration_files(model, tmp_path / "calibration", "rig")
    # The policy server shares this machine's two cores: a render thread may fall behind, which is not
    # what this test is about (camera staleness has its own tests), so frames may be older than usual.
    lenient = CaptureConfig(max_frame_age_s=5.0)
    cameras = tuple(
        VirtualCameraConfig(name, CameraRole(name), width=w, height=h, phase_s=0.004 * i, seed=i, capture=lenient)
        for i, (name, h, w) in enumerate(TEST_CAMERAS)
    )
    config = RigConfig(
        id="rig",
        calibration=CalibrationConfig(dir=tmp_path / "calibration"),
        cameras=cameras,
        virtual=VirtualRigConfig(),
    )
    with in_process_ports(model) as ports:
        yield lambda: BimanualRig(config, ports, with_leaders=False)


def server_chunk(policy, pre, post, inputs: PolicyInput) -> np.ndarray:
    """The post-processed chunk LeRobot's server computes for one observation (its own helpers)."""
    import torch
    from lerobot.async_inference.helpers import raw_observation_to_observation

    from policies.engines.remote_wire import raw_observation

    batch = raw_observation_to_observation(
        raw_observation(inputs, TEST_CAMERAS), rig_lerobot_features(TEST_CAMERAS), policy.config.image_features
    )
    with torch.inference_mode():
        actions = policy.predict_action_chunk(pre(batch))
        return np.stack([post(actions[:, i, :]).squeeze(0).numpy() for i in range(actions.shape[1])])


# 1.5 s of actions a chunk: a loaded machine's server took 0.3-0.7 s a chunk, longer than the 10
# actions (0.33 s) of the shared tiny ACT, so every chunk arrived after its ticks had passed.
LOOP_CHUNK = 45


@pytest.mark.slow
def test_lerobots_policy_server_drives_our_control_loop_on_the_virtual_rig(policy_server, tmp_path, camera_rig):
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    from policies.source import PolicySource
    from robot.control_loop import ControlLoop

    tiny_act_dir = write_tiny_act(tmp_path / "act_45", chunk_size=LOOP_CHUNK)
    config = remote_config(policy_server.port, tiny_act_dir, blend=BlendMode.REPLACE, actions_per_chunk=LOOP_CHUNK)
    engine = RemoteEngine(config, TEST_CAMERAS, fps=30.0)
    source = PolicySource(engine, task="Fold the cloth")
    log = StepLog(source, served=60)  # two seconds of actions, two chunks at least
    try:
        engine.start()  # the server loads the policy before the loop starts (the first chunk is asked by tick 0)
        with camera_rig() as rig:
            loop = ControlLoop(rig, source, hooks=[log])
            log.stop = loop.stop
            loop.run(duration_s=EVENT_TIMEOUT_S)
            limits = {side: guard.limits for side, guard in rig.guards.items()}
        stats = engine.stats()
    finally:
        source.close()

    starved = [f.starved for f in log.facts]
    assert starved[0]  # the first tick cannot have a chunk yet
    assert starved.count(False) >= 60, (
        f"only {starved.count(False)} of {len(starved)} ticks got an action; {stats}\n{policy_server.log_tail()}"
    )
    assert stats.chunks >= 2
    assert stats.starved_ticks == starved.count(True)
    assert stats.latency_p50_s is not None
    assert stats.latency_p50_s > 0

    # Starved ticks at the start hold the pose the followers started in.
    start_pose = log.steps[0].observation.state().vector.astype(np.float32)
    first_served = starved.index(False)
    for step in log.steps[:first_served]:
        np.testing.assert_array_equal(step.requested.vector, start_pose)

    # Every action is the policy's post-processed output for the observation of its chunk's tick, at
    # the right offset: chunks are aligned by tick index (REPLACE: nothing blended in this test).
    policy = ACTPolicy.from_pretrained(tiny_act_dir).eval()
    pre, post = make_pre_post_processors(policy.config, pretrained_path=str(tiny_act_dir))
    by_tick = {step.tick.index: step for step in log.steps}
    chunks: dict[int, np.ndarray] = {}
    for step, facts in zip(log.steps, log.facts, strict=True):
        if facts.starved:
            continue
        index = int(facts.index_in_chunk)
        observed_at = step.tick.index - index
        assert 0 <= index < LOOP_CHUNK
        if observed_at not in chunks:
            chunks[observed_at] = server_chunk(policy, pre, post, source.inputs(by_tick[observed_at].observation))
        requested = step.requested.vector
        assert np.isfinite(requested).all()
        np.testing.assert_allclose(requested, chunks[observed_at][index], rtol=1e-4, atol=1e-3)

    # What reached the followers went through the safety layer: finite, within the joint limits,
    # and never more than the per-tick step cap away from the previous command.
    body = [i for i, k in enumerate(BIMANUAL_KEYS) if "gripper" not in k]
    previous = None
    for step in log.steps:
        sent = step.sent.vector
        assert np.isfinite(sent).all()
        for side, side_limits in limits.items():
            for joint, value in step.sent.side(Side(side)).items():
                assert side_limits.contains(joint, value)
        if previous is not None:
            # The cap applies to the goal; converting it to encoder steps may add half a step (0.044°).
            assert np.abs(sent[body] - previous[body]).max() <= 12.0 + 360 / 4096
        previous = sent
    clipped = sum(step.sent != step.requested for step in log.steps)
    assert clipped > 0, "random ACT weights ask for big moves: the safety layer must have clipped some"


@pytest.mark.slow
def test_a_restarted_server_is_reconnected_and_a_lost_one_ends_the_episode(tmp_path, tiny_act_dir):
    port = free_port()
    server = PolicyServerProcess(port, tmp_path).start()
    patient = RemoteEngine(remote_config(port, tiny_act_dir, reconnect_for_s=300.0), TEST_CAMERAS)
    try:
        patient.start()
        tick = tick_until(patient, lambda e: e.stats().chunks >= 2)
        starved_at_loss = patient.stats().starved_ticks
        server.stop()
        # The arms hold (starved ticks) while the engine retries a server that is gone.
        tick = tick_until(
            patient, lambda e: e.reconnect_attempts > 0 and e.stats().starved_ticks > starved_at_loss, start_tick=tick
        )
        chunks_before = patient.stats().chunks
        server = PolicyServerProcess(port, tmp_path).start()  # a fresh server: no policy loaded until we say so
        tick_until(patient, lambda e: e.stats().chunks > chunks_before, start_tick=tick)
    finally:
        patient.close()

    impatient = RemoteEngine(remote_config(port, tiny_act_dir, reconnect_for_s=1.0), TEST_CAMERAS)
    try:
        impatient.start()
        tick = tick_until(impatient, lambda e: e.stats().chunks >= 1)
        server.stop()
        with pytest.raises(RemotePolicyError, match=f"lost the policy server at 127.0.0.1:{port}"):
            tick_until(impatient, lambda e: False, start_tick=tick)
    finally:
        impatient.close()
        server.stop()
