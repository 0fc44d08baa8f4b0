"""Which of a dataset's cameras stands for each of our views: `--dataset.views=overhead:top,left_wrist:front`.

Our rubrics, frame selection and review page speak three views (`CAMERA_ROLES`); a dataset recorded by
someone else names its cameras as it likes (`observation.images.top`). A view map says which camera
is which view; a view it does not name keeps its own name, so our datasets need no map at all.

    view_map("overhead:top")                      -> {"overhead": "top"}
    resolve_views({"overhead": "top"}, {"top", "front"}, root)  -> {"overhead": "top"}
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from pathlib import Path

from evaluation.errors import ConfigError, DatasetReadError
from robot.joints import CAMERA_ROLES
from teleop.dataset.vocabulary import IMAGE_PREFIX

EXAMPLE = "--dataset.views=overhead:top"


def view_map(text: str) -> dict[str, str]:
    """Our view -> the dataset's camera name, from `view:camera,...` ("" maps nothing).

    Raises:
        ConfigError: an item is not `view:camera`, names a view we do not have, or maps one twice.
    """
    out: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        view, sep, camera = (s.strip() for s in item.partition(":"))
        camera = camera.removeprefix(IMAGE_PREFIX)
        if not sep or not view or not camera:
            raise ConfigError(f"dataset.views: {item!r} is not view:camera; for example {EXAMPLE}")
        if view not in CAMERA_ROLES:
            raise ConfigError(
                f"dataset.views: {view!r} is not one of our views {list(CAMERA_ROLES)}; for example {EXAMPLE}"
            )
        if view in out:
            raise ConfigError(f"dataset.views maps {view!r} twice ({out[view]!r} and {camera!r}); keep one")
        out[view] = camera
    cameras = list(out.values())
    if len(set(cameras)) < len(cameras):
        raise ConfigError(f"dataset.views gives one camera two views ({text}); each camera stands for one view")
    return out


def resolve_views(views: Mapping[str, str], cameras: Set[str], root: Path) -> dict[str, str]:
    """Each of our views the dataset has -> its camera, in CAMERA_ROLES order (mapped names first, then our own).

    Raises:
        DatasetReadError: the map names a camera the dataset does not have (the next step lists its cameras).
    """
    for view, camera in views.items():
        if camera not in cameras:
            raise DatasetReadError(
                f"{root} has no camera {camera!r} for --dataset.views ({view}:{camera}); its cameras are "
                f"{sorted(cameras) or 'none'}. Next: {suggest(cameras)}"
            )
    taken = set(views.values())
    out: dict[str, str] = {}
    for view in CAMERA_ROLES:
        if view in views:
            out[view] = views[view]
        elif view in cameras and view not in taken:
            out[view] = view
    return out


def suggest(cameras: Set[str]) -> str:
    """A view map to try on a dataset whose cameras have other names (its first camera as the overhead view)."""
    if not cameras:
        return "leave out --dataset.views (the dataset has no cameras)"
    return f"--dataset.views=overhead:{sorted(cameras)[0]} (one view:camera pair per camera, comma-separated)"
