"""The README's pictures, made by the product itself from a `make demo` run.

    make demo && .venv/bin/python -m benchmarks.readme_figures          # -> benchmarks/figures/*.png
    .venv/bin/python -m benchmarks.readme_figures --demo outputs/demo --out /tmp/figures

It serves the demo's demonstrations with `so101-review` (a child process on a free loopback port)
and photographs, in the distribution's headless Chromium driven by Playwright: the episodes page,
an episode page (the three synced videos, the scores, the evidence and the override form), the
dry-run report of `so101-replay` and the comparison report of `so101-report`; it also copies the
report's heatmap and per-criterion plots. Nothing is drawn by hand: what you see is what a user
gets. Scores in a demo without an API key come from the labelled heuristic scorer.
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 860}
BIN = Path(sys.executable).parent


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_review(dataset: Path, port: int) -> subprocess.Popen:
    """so101-review on 127.0.0.1:port, once it answers."""
    process = subprocess.Popen(
        [str(BIN / "so101-review"), f"--dataset.root={dataset}", f"--server.port={port}", "--reviewer=readme"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"HF_HUB_OFFLINE": "1"},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"so101-review exited: {process.stderr.read() if process.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("so101-review did not start within 60 s")


def shoot(page: Page, url: str, path: Path, *, videos: bool = False, full_page: bool = False) -> None:
    """Open `url`, wait until it (and its videos) are ready, and save a PNG."""
    page.goto(url)
    page.wait_for_load_state("networkidle")
    if videos:
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('video')).every((v) => v.readyState >= 2)", timeout=60_000
        )
        # Seek to the middle of the episode, so the pictures show the arms at work.
        page.evaluate("() => { for (const v of document.querySelectorAll('video')) v.currentTime = v.duration / 2; }")
        page.wait_for_timeout(1000)
    page.evaluate("() => window.scrollTo(0, 0)")
    height = min(int(page.evaluate("() => document.documentElement.scrollHeight")) + 16, VIEWPORT["height"])
    clip = None if full_page else {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height}
    page.screenshot(path=str(path), full_page=full_page, clip=clip)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    """Make the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, default=Path("outputs/demo"), help="a finished so101-demo folder")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/figures"), help="where the PNGs go")
    args = parser.parse_args(argv)
    demo, out = args.demo.resolve(), args.out
    dataset = demo / "datasets" / "fold_cloth"
    if not (dataset / "meta" / "info.json").is_file():
        parser.error(f"no demo output at {demo}: run `make demo` first (or pass --demo)")
    if not CHROMIUM.exists():
        parser.error("needs /usr/bin/chromium: run .ci/install_chromium.sh")
    out.mkdir(parents=True, exist_ok=True)
    for plot in ("heatmap-1.png", "criteria.png", "comparison.png"):
        target = out / f"report_{plot.replace('-1', '')}"
        shutil.copy(demo / "report" / "plots" / plot, target)
        print(f"wrote {target}")
    port = free_port()
    review = serve_review(dataset, port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            base = f"http://127.0.0.1:{port}"
            shoot(page, f"{base}/", out / "review_episodes.png")
            shoot(page, f"{base}/episodes/0", out / "review_episode.png", videos=True)
            shoot(page, (demo / "replay" / "report.html").as_uri(), out / "replay_report.png")
            shoot(page, (demo / "report" / "report.html").as_uri(), out / "comparison_report.png")
            browser.close()
    finally:
        review.terminate()
        review.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
