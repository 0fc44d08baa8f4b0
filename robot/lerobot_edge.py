"""The LeRobot facts read outside its motor and dataset classes (pinned to lerobot 0.6.1).

LeRobot is imported by a few adapter modules only (tests/test_layers.py lists them). This one holds
LeRobot's home folder, where a dataset goes when no folder is given, and its video encoder
settings, which the doctor measures with the codec so101-record will write.

    lerobot_home() / "me/fold_cloth"        # the default folder of dataset me/fold_cloth
    codec_settings("h264").pix_fmt          # "yuv420p"
"""

from dataclasses import dataclass
from pathlib import Path


def lerobot_home() -> Path:
    """$HF_LEROBOT_HOME (normally ~/.cache/huggingface/lerobot): a dataset's default parent folder."""
    # Imported when asked: the constant is read from the environment when LeRobot's module loads.
    from lerobot.utils.constants import HF_LEROBOT_HOME

    return Path(HF_LEROBOT_HOME)


@dataclass(frozen=True)
class CodecSettings:
    """How LeRobot's dataset writer opens a video encoder."""

    pix_fmt: str  # the encoder's input pixel format, e.g. yuv420p
    options: dict[str, str]  # the codec's private options (crf, preset, g, ...), as strings


def codec_settings(vcodec: str) -> CodecSettings:
    """LeRobot's pixel format and encoder options for `vcodec` (libsvtav1, h264, ...)."""
    from lerobot.configs import RGBEncoderConfig

    config = RGBEncoderConfig(vcodec=vcodec)
    return CodecSettings(str(config.pix_fmt), dict(config.get_codec_options(as_strings=True)))
