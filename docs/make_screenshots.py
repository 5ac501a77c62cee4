"""Regenerate the pictures in docs/img from the current code.

    python docs/make_screenshots.py            # render the saved example results, photograph them
    python docs/make_screenshots.py --measure  # first re-run the commands that made those results

Each picture is a page written by ``dummyprof report RESULTS --format html`` from a results
file kept beside it (``docs/img/NAME.json``), photographed by a plain
``chromium --headless --screenshot``: no virtual time and no DevTools, so the picture shows
what the page holds once it has loaded, as a reader or CI sees it. ``--measure`` first runs
each example's command again (about two minutes on two shared cores) and replaces its
results file. Needs the ``html`` extra (plotly) and Chromium (``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "img"
WIDTH = 1400  # px: the page's full width
# picture name -> (the dummyprof command that measures its results, window height in px)
EXAMPLES: dict[str, tuple[list[str], int]] = {
    "compare-html": (["compare", "--depth", "12"], 2860),  # the whole page: charts, then every table
    "sweep-html": (["sweep", "--depth", "1:16"], 1900),
    # the answer first: start-up per method on a log axis
    "engram-html": (["engram", "--rows", "2e9", "--offload", "--deadline", "600"], 1150),
    # bytes each rank holds and writes
    "deployment-html": (
        ["compare", "--model", "hf:tests/data/DeepSeek-V3.json", "--tp", "8", "--device-memory", "141GiB"],
        1400,
    ),
    "dense-decoder-html": (["compare", "--preset", "dense-decoder"], 1700),  # a real model's icicle: layers 0-3 ×4
}
CHROMIUM = ("chromium", "chromium-browser", "google-chrome", "chrome")


def dummyprof(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "dummyprof", *args], cwd=ROOT, env=env, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", action="store_true", help="re-run the example commands first")
    parser.add_argument("names", nargs="*", help=f"pictures to make: {', '.join(EXAMPLES)} (default: all)")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in EXAMPLES]
    if unknown:
        parser.error(f"unknown picture {unknown[0]!r}; choose from: {', '.join(EXAMPLES)}")
    chromium = next((path for name in CHROMIUM if (path := shutil.which(name))), None)
    if chromium is None:
        sys.exit("no chromium on PATH: apt-get install --no-install-recommends chromium")
    for name in args.names or EXAMPLES:
        command, height = EXAMPLES[name]
        results = IMAGES / f"{name}.json"
        if args.measure:
            dummyprof(*command, "--quiet", "--json", str(results), "--force")
        with tempfile.TemporaryDirectory() as folder:
            page = Path(folder) / f"{name}.html"
            dummyprof("report", str(results), "--format", "html", "--output", str(page))
            picture = IMAGES / f"{name}.png"
            subprocess.run(
                [
                    chromium,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    f"--user-data-dir={folder}/profile",
                    f"--screenshot={picture}",
                    f"--window-size={WIDTH},{height}",
                    page.as_uri(),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        print(f"{picture.relative_to(ROOT)}: {picture.stat().st_size:,} bytes from {results.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
