"""A contact sheet of the frames a judge call sends: one row per keyframe, one column per view."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from evaluation.judge.evidence import EvidencePack
from robot.joints import CAMERA_ROLES

_CAPTION_PX = 40  # caption strip under each thumbnail (three lines), pixels
_PAD_PX = 6  # space between cells, pixels
_BACKGROUND = (32, 32, 32)
_EMPTY = (70, 70, 70)


def render_contact_sheet(pack: EvidencePack, cell_width: int = 320) -> Image.Image:
    """Thumbnails of every image in the pack, captioned with view, time, frame and phase."""
    keyframes = sorted({i.frame_index for i in pack.images})
    views = [v for v in CAMERA_ROLES if any(i.view == v for i in pack.images)]
    first = pack.images[0]
    cell_height = round(cell_width * first.height / first.width)
    width = len(views) * (cell_width + _PAD_PX) + _PAD_PX
    height = len(keyframes) * (cell_height + _CAPTION_PX + _PAD_PX) + _PAD_PX
    sheet = Image.new("RGB", (width, height), _BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default()
    by_key = {(i.frame_index, i.view): i for i in pack.images}
    for row, frame_index in enumerate(keyframes):
        y = _PAD_PX + row * (cell_height + _CAPTION_PX + _PAD_PX)
        for col, view in enumerate(views):
            x = _PAD_PX + col * (cell_width + _PAD_PX)
            image = by_key.get((frame_index, view))
            if image is None:
                draw.rectangle((x, y, x + cell_width - 1, y + cell_height - 1), fill=_EMPTY)
                draw.text((x + 4, y + 4), f"{view}: not sent", fill=(200, 200, 200), font=font)
                continue
            with Image.open(io.BytesIO(image.jpeg)) as im:
                sheet.paste(im.convert("RGB").resize((cell_width, cell_height)), (x, y))
            wrapped = textwrap.wrap(image.phase_label, width=max(10, cell_width // 6))[:2]
            caption = "\n".join([f"{image.ref}  frame {image.frame_index}", *wrapped])
            draw.multiline_text((x + 2, y + cell_height + 2), caption, fill=(235, 235, 235), font=font, spacing=2)
    return sheet


def write_contact_sheet(pack: EvidencePack, path: Path) -> Path:
    """Render and save a contact sheet (JPEG or PNG by suffix); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    render_contact_sheet(pack).save(path, quality=90)
    return path
