"""The foot pedal: presses read from an input device become the take-over key; bad devices are refused clearly.

The kernel's side is replaced by a FIFO carrying the same 24-byte `input_event` records an evdev
device delivers (below the seam: what a real pedal sends is that byte format), and the pedal's key
reaches the session through the same `KeyReader.poll` as the terminal's keys.
"""

import os
import time
from pathlib import Path

import pytest

from robot.errors import ConfigError
from teleop.keys import Key, KeyReader
from teleop.pedal import EVENT, KEY_CODES, PedalReader

EV_SYN, EV_KEY = 0, 1


def event(kind: int, code: int, value: int) -> bytes:
    return EVENT.pack(0, 0, kind, code, value)


def poll_until(reader: KeyReader, count: int, timeout_s: float = 5.0) -> list[Key]:
    keys: list[Key] = []
    deadline = time.monotonic() + timeout_s
    while len(keys) < count and time.monotonic() < deadline:
        keys += reader.poll()
        time.sleep(0.01)
    return keys


def test_each_press_of_the_pedal_key_is_one_take_over_among_the_keys(tmp_path: Path):
    fifo = tmp_path / "event-kbd"
    os.mkfifo(fifo)
    with PedalReader(fifo, {"KEY_A": Key.TAKE_OVER}) as pedal, KeyReader(stream=None, extra=pedal.poll) as keys:
        with open(fifo, "wb", buffering=0) as device:
            a, b = KEY_CODES["KEY_A"], KEY_CODES["KEY_B"]
            # press, auto-repeat, release, a sync, another key, then a press split across two writes
            stream = event(EV_KEY, a, 1) + event(EV_KEY, a, 2) + event(EV_KEY, a, 0) + event(EV_SYN, 0, 0)
            stream += event(EV_KEY, b, 1) + event(EV_KEY, a, 1)
            device.write(stream[:-10])
            time.sleep(0.05)
            device.write(stream[-10:])
            assert poll_until(keys, 2) == [Key.TAKE_OVER, Key.TAKE_OVER]
        assert keys.poll() == []


def test_a_missing_device_and_an_unknown_key_are_refused_with_the_next_step(tmp_path: Path):
    with (
        pytest.raises(ConfigError, match=r"no such device\. Next: ls -l /dev/input/by-id/"),
        PedalReader(tmp_path / "nope", {"KEY_A": Key.TAKE_OVER}),
    ):
        pass
    with pytest.raises(ConfigError, match="KEY_Q"):
        PedalReader(tmp_path / "nope", {"KEY_Q": Key.TAKE_OVER})


def test_deploy_refuses_an_unknown_pedal_key_before_anything_runs():
    from policies.correction import CorrectionConfig

    with pytest.raises(ConfigError, match=r"correction\.pedal_key='KEY_Z'"):
        CorrectionConfig(enabled=True, pedal_key="KEY_Z")
