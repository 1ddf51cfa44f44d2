"""Regenerate docs/screenshots/: the leaderboard page and a run page at 1,400 and 390 px, from the report
test's fixture (real runs through the sandbox), in headless Chromium. Run from the repository root:

    .venv/bin/python benchmarks/report_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import Browser  # noqa: E402
from report_fixture import build  # noqa: E402


def main() -> None:
    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, Browser() as browser:
        board = build(Path(tmp), problems=24, n=4)
        run = (board / "../runs/tiny/report.html").resolve()
        for width in (1400, 390):
            browser.set_width(width)
            browser.open((board / "index.html").as_uri())
            browser.screenshot(out / f"leaderboard-{width}.png")
            browser.open(run.as_uri() + "#filter=failed")
            browser.js("document.querySelector(\"details.sample[data-problem='HumanEval/1']\").open = true")
            browser.screenshot(out / f"run-{width}.png", max_height=1900 if width > 1000 else 2600)
    for path in sorted(out.glob("*.png")):
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
