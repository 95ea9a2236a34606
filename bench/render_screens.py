"""Render the pictures of docs/img/ from real captures: a terminal screen captured with
``tmux capture-pane -e -p`` (ANSI colours kept) becomes an SVG through rich's ``export_svg``,
and a Markdown report becomes HTML through markdown-it-py; headless Chromium takes the PNG.

    python bench/render_screens.py terminal CAPTURE.ansi OUT.png --title "bf16-migrate ..." [--width 110]
    python bench/render_screens.py markdown REPORT.md OUT.png

Needs ``chromium`` on PATH (Debian's package) and rich and markdown-it-py (bf16-migrate's
dependencies). The captures themselves are made by hand (docs/usage.md and the release notes
say with which commands).
"""

from __future__ import annotations

import argparse
import html
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

# GitHub's Markdown look, in short: what a job summary page shows
MARKDOWN_CSS = """
body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; font-size: 14px; line-height: 1.5;
       color: #1f2328; margin: 24px; max-width: 1100px; }
h2 { border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; font-size: 1.5em; }
h3 { font-size: 1.25em; }
table { border-collapse: collapse; margin: 12px 0; width: 100%; }
h4 { margin: 20px 0 4px; font-size: 1em; }
td code { word-break: break-all; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
tr:nth-child(2n) td { background: #f6f8fa; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 85%; background: #eff1f3; padding: .2em .4em;
       border-radius: 6px; }
pre { background: #f6f8fa; padding: 12px; border-radius: 6px; }
ul { padding-left: 2em; }
li.task { list-style: none; margin-left: -1.4em; }
details { margin: 8px 0; }
"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("chromium is not installed (Debian: apt-get install chromium)")


def screenshot(page: Path, out: Path, width: int, height: int) -> None:
    """A PNG of ``page`` (a local file) at ``width`` x ``height`` CSS pixels."""
    subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def terminal(capture: Path, out: Path, title: str, columns: int) -> None:
    from rich.console import Console
    from rich.text import Text

    text = capture.read_text(encoding="utf-8").rstrip("\n")
    with open(os.devnull, "w") as sink:  # the console only records
        console = Console(record=True, width=columns, force_terminal=True, color_system="truecolor", file=sink)
        console.print(Text.from_ansi(text))
    lines = text.count("\n") + 1
    with tempfile.TemporaryDirectory() as tmp:
        svg = Path(tmp) / "screen.svg"
        svg.write_text(console.export_svg(title=title), encoding="utf-8")
        page = Path(tmp) / "screen.html"
        page.write_text(f'<html><body style="margin:0;background:#fff"><img src="{svg.name}"></body></html>')
        # rich's SVG: about 12.2 px per column and 24.4 px per line at its default font size, plus the frame
        screenshot(page, out, int(columns * 12.2) + 40, int(lines * 24.4) + 110)


def markdown(report: Path, out: Path, height: int) -> None:
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(report.read_text(encoding="utf-8"))
    body = body.replace("<li>[ ] ", '<li class="task">&#9744; ')
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(
            f"<html><head><meta charset='utf-8'><title>{html.escape(report.name)}</title>"
            f"<style>{MARKDOWN_CSS}</style></head><body>{body}</body></html>",
            encoding="utf-8",
        )
        screenshot(page, out, 1150, height)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["terminal", "markdown"])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--title", default="bf16-migrate")
    parser.add_argument("--width", type=int, default=110, help="terminal columns")
    parser.add_argument("--height", type=int, default=1400, help="page height in pixels (markdown)")
    args = parser.parse_args()
    if args.kind == "terminal":
        terminal(args.source, args.out, args.title, args.width)
    else:
        markdown(args.source, args.out, args.height)


if __name__ == "__main__":
    main()
