"""The live view: the loop hands each step over by reference, the page serves the cameras and the joint traces.

The server is the real one (standard-library HTTP on a free port); so101-teleop runs it on the virtual rig.
"""

import json
import re
import threading
import urllib.error
import urllib.request

import cv2
import numpy as np
import pytest

from robot.control_loop import Step
from robot.errors import ConfigError
from teleop.live_view.config import LiveViewConfig
from teleop.live_view.server import LiveView
from teleop.live_view.session import live_view_hooks
from tests.support.commands import ForegroundJob
from tests.support.observations import observation, tick
from tests.support.rig_files import rig_yaml

CAMERAS = ("left_wrist", "right_wrist", "overhead")


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def _step(t_s: float, offset: float = 0.0) -> Step:
    seen = observation(offset=offset, t_s=t_s, cameras=CAMERAS)
    return Step(tick(int(t_s * 30)), seen, seen.state(), seen.state(), stale_observation=False)


def test_the_page_serves_each_camera_and_every_joint_trace():
    with LiveView(LiveViewConfig(enabled=True, port=0)) as view:
        view.feed.on_step(_step(1.0))
        assert view.renderer.render_once()
        assert not view.renderer.render_once()  # the same step is not rendered twice
        view.feed.on_step(_step(1.5, offset=3.0))
        assert view.renderer.render_once()
        status, page = _get(view.url)
        assert status == 200
        assert b"so101 live view" in page
        status, body = _get(view.url + "state.json")
        state = json.loads(body)
        assert state["cameras"] == sorted(CAMERAS)
        assert state["renders"] == 2
        trace = state["traces"]["left_follower.elbow_flex"]  # left joint i reads 10+i (+ offset)
        assert [value for _, value in trace] == [12.0, 15.0]
        assert trace[1][0] - trace[0][0] == pytest.approx(0.5)
        assert len(state["traces"]) == 12  # both followers' six joints (this rig has no leaders)
        status, jpeg = _get(view.url + "frame/overhead.jpg")
        assert status == 200
        assert cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR).shape == (4, 6, 3)
        assert _get(view.url + "frame/nope.jpg")[0] == 404


def test_the_loop_never_waits_for_the_view():
    with LiveView(LiveViewConfig(enabled=True, port=0)) as view:
        step = _step(2.0)
        with view.renderer.lock:  # an HTTP handler or a render holding the view's lock
            done = threading.Event()
            threading.Thread(target=lambda: (view.feed.on_step(step), done.set()), daemon=True).start()
            assert done.wait(10)  # the loop's hook returned while the lock was held
        assert view.feed.latest is step


def test_a_taken_port_is_one_line_with_the_flag_that_fixes_it():
    with LiveView(LiveViewConfig(enabled=True, port=0)) as taken:
        port = int(taken.url.rsplit(":", 1)[1].strip("/"))
        busy = live_view_hooks(LiveViewConfig(enabled=True, port=port), say=lambda line: None)
        with pytest.raises(ConfigError, match=r"view.port=\d+: cannot serve .* Next: add --view.port=0"), busy:
            pass
    with live_view_hooks(LiveViewConfig(), say=lambda line: None) as hooks:
        assert hooks == []  # off by default: no hook on the loop


@pytest.mark.slow
def test_so101_teleop_serves_the_live_view_of_the_virtual_rig(tmp_path):
    rig = rig_yaml(tmp_path, rig_id="view_rig")
    with ForegroundJob(
        "so101-teleop", f"--config_path={rig}", "--duration_s=20", "--view.enabled=true", "--view.port=0", "--json=true"
    ) as job:
        job.wait_for("live view: http://", 120)
        url = re.search(r"live view: (http://\S+)", job.text).group(1)

        def rendered() -> dict:
            return json.loads(_get(url + "state.json")[1])

        job.wait_until(
            lambda: rendered()["renders"] >= 3 and len(rendered()["cameras"]) == 3, 60, "three cameras rendered"
        )
        state = rendered()
        assert {"left_leader.gripper", "right_follower.gripper"} <= set(state["traces"])
        status, jpeg = _get(url + "frame/overhead.jpg")
        assert status == 200
        assert cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR).shape == (96, 128, 3)
        job.signal_group(2)  # Ctrl-C: the safe exit, then the view stops with the session
        assert job.finish(120) == 130
    with pytest.raises(urllib.error.URLError):  # the page went with the session
        _get(url)
