"""The virtual table between episodes: tidied with the cloth where the episode's seed puts it, and its truth.

    table = VirtualTable(scene, dataset_key="me/fold", failure_rate=0.2, perform=client.perform)
    draw = table.tidy(episode_index)   # cloth at the episode's pose; the operator's hands start the task
    ...                                # the episode runs
    card["truth"] = table.truth()      # R1-R3 from what the cloth did since the tidy

The stand-in for the person who tidies the table between a user's episodes. The operator's plan takes
about 0.3 s of inverse kinematics, so the next episode's plan is worked out in a thread while
this one runs (`prefetch`), never on the control loop. On a rollout (`perform=None`) the table is
tidied the same way and nobody's hands move: the policy drives the arms.
"""

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from robot.cameras.camera import Camera
from robot.cameras.virtual.camera import VirtualCamera
from robot.cameras.virtual.cloth_truth import TRUTH_DEFINITION, cloth_truth
from robot.cameras.virtual.fold_task import EpisodeDraw, FoldPlan, blind_draw, draw_episode, episode_seed, fold_plan
from robot.cameras.virtual.scene import VirtualScene

Perform = Callable[[dict[str, Any]], object]  # plays a plan's JSON on the virtual rig's hands


def scene_of(cameras: Mapping[str, Camera]) -> VirtualScene | None:
    """The world a rig's virtual cameras show (they share one), or None without virtual cameras."""
    return next((camera.scene for camera in cameras.values() if isinstance(camera, VirtualCamera)), None)


class VirtualTable:
    """Tidies the scene per episode and scores what became of the cloth.

    `tidy` runs on the control loop and `truth` in the session's save thread, never at once: the session
    begins an episode only after the last save returned. The planning thread ends with the process.
    """

    def __init__(
        self, scene: VirtualScene, dataset_key: str, failure_rate: float, perform: Perform | None, blind: bool = False
    ) -> None:
        """`blind`: the operator plans for the middle of the cloth's range, wherever it lies (`blind_draw`)."""
        self._scene = scene
        self._blind = blind
        self._dataset_key = dataset_key
        self._failure_rate = failure_rate
        self._perform = perform
        self._plans: dict[int, Future[tuple[EpisodeDraw, FoldPlan | None]]] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fold-plan")
        self._draw: EpisodeDraw | None = None

    def _work_out(self, index: int) -> tuple[EpisodeDraw, FoldPlan | None]:
        draw = draw_episode(episode_seed(self._dataset_key, index), self._failure_rate)
        if self._perform is None:
            return draw, None
        return draw, fold_plan(blind_draw(draw) if self._blind else draw, self._scene.layout)

    def prefetch(self, index: int) -> None:
        """Start working out episode `index`'s draw and plan in the background."""
        if index not in self._plans:
            self._plans[index] = self._pool.submit(self._work_out, index)

    def tidy(self, index: int) -> EpisodeDraw:
        """Lay the cloth flat at episode `index`'s pose and start the operator's plan (a re-record repeats both)."""
        self.prefetch(index)
        draw, plan = self._plans[index].result()
        self._scene.reset_cloth(draw.pose)
        if plan is not None and self._perform is not None:
            self._perform(plan.to_json())
        self._draw = draw
        for old in [i for i in self._plans if i < index]:
            del self._plans[old]
        self.prefetch(index + 1)
        return draw

    def _operator(self, draw: EpisodeDraw) -> dict[str, Any]:
        if self._blind:
            return asdict(blind_draw(draw).variation) | {"blind": True}
        return asdict(draw.variation)

    def truth(self) -> dict[str, Any]:
        """The quality card's "truth": R1-R3 from the cloth since the last tidy, with the seed and pose."""
        if self._draw is None:
            raise RuntimeError("truth() before tidy(): no episode has started on the virtual table")
        result = cloth_truth(self._scene.cloth_history())
        return {
            "definition": TRUTH_DEFINITION,
            "scores": dict(result.scores),
            "facts": dict(result.facts),
            "seed": self._draw.seed,
            "cloth": asdict(self._draw.pose),
            "operator": None if self._perform is None else self._operator(self._draw),
        }
