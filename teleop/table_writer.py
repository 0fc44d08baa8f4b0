"""Episodes on the virtual rig: each starts on a tidied table and is saved with the cloth's ground truth.

    writer = table_writer(writer, rig, found, dataset_key=repo_id, operator=True)   # so101-record
    writer = table_writer(writer, rig, found, dataset_key=repo_id, operator=False)  # so101-deploy

On a real rig, or a virtual one without virtual cameras (nothing draws the cloth, so nothing can
say what became of it), the writer comes back unchanged. Otherwise every `begin_episode` tidies the
table at the episode's seeded pose (a re-recorded episode gets the same one) and, when recording
demonstrations, sets the scripted operator's hands doing the task from there; every
`save_episode` adds the quality card's "truth" (robot/cameras/virtual/cloth_truth.py): the card is
a sidecar, so the truth is fingerprinted with the episode and carried by curation like its other facts.
"""

from collections.abc import Mapping
from typing import Any

import numpy as np

from robot.cameras.virtual.table import VirtualTable, scene_of
from robot.rig import BimanualRig
from robot.rig_ports import FoundPorts
from teleop.session import EpisodeWriter


class TableWriter:
    """An `EpisodeWriter` whose episodes start on a tidied virtual table and save with their truth."""

    def __init__(self, writer: EpisodeWriter, table: VirtualTable) -> None:
        self.writer = writer
        self.table = table

    def begin_episode(self, task: str) -> int:
        """Start an episode on a table tidied at its pose (see `DatasetWriter.begin_episode`)."""
        index = self.writer.begin_episode(task)
        self.table.tidy(index)
        return index

    def add_frame(
        self, state: np.ndarray, action: np.ndarray, images: Mapping[str, np.ndarray], timing: Mapping[str, float]
    ) -> bool:
        """Hand over one frame (see `DatasetWriter.add_frame`)."""
        return self.writer.add_frame(state, action, images, timing)

    def save_episode(self, quality: dict) -> Any:
        """Save with the cloth's truth in the card (runs in the session's save thread, off the loop)."""
        return self.writer.save_episode(quality | {"truth": self.table.truth()})

    @property
    def longest_save_s(self) -> float:
        """The longest `save_episode` can block, seconds (the truth takes milliseconds)."""
        return self.writer.longest_save_s

    def discard_episode(self) -> None:
        """Drop the episode in progress; the next `begin_episode` tidies the table again."""
        self.writer.discard_episode()


def table_writer(
    writer: EpisodeWriter,
    rig: BimanualRig,
    found: FoundPorts,
    *,
    dataset_key: str,
    operator: bool,
    first_index: int = 0,
) -> EpisodeWriter:
    """`writer` wrapped for the virtual table when the rig is virtual and has virtual cameras, else `writer`.

    Args:
        writer: the dataset writer the session would use.
        rig: the connected rig (its virtual cameras share the scene with the cloth).
        found: where the arms are (the virtual rig's control socket plays the operator's plan).
        dataset_key: seeds the episodes' cloth poses (the dataset's repo_id: another dataset, other poses).
        operator: the scripted operator performs the task on the leaders (recording demonstrations).
        first_index: the episode expected first (the dataset's episode count), planned ahead at once.
    """
    scene = scene_of(rig.cameras)
    virtual = rig.config.virtual
    if found.control is None or scene is None or virtual is None:
        return writer
    perform = None
    if operator:

        def perform(plan: dict[str, Any]) -> object:
            with found.client() as client:
                return client.perform(plan)

    table = VirtualTable(scene, dataset_key, virtual.task_failure_rate, perform, blind=virtual.operator_blind)
    table.prefetch(first_index)
    return TableWriter(writer, table)
