#!/usr/bin/env python3
"""How fast a warm `vx lsp` answers an edit with its diagnostics (issue 50: within 50 ms at
1,000 projects).

    python3 bench/lsp.py --projects 1000 [--rounds 20] [--vx target/release/vx]

Generates a workspace with bench/generate.py (vx's files only), starts `vx lsp` through the
real client the tests use (pygls's LanguageClient, crates/vx-test-support/src/lsp_client.py,
with the Python of `.test-tools/clientvenv`, which scripts/test installs), opens the leaf
project's `vx.toml`, waits for the first analysis, then in each round sends one edit that
breaks the file (`depends-on` names a task no project has) and one that mends it, each timed
from the `didChange` to the `publishDiagnostics` of that file that says so (the break's
message, then no diagnostic). Prints the medians with the range (min–max) and `git status`
of the same workspace as a floor for scale. Python 3 standard library only besides the client.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLIENT = ROOT / "crates/vx-test-support/src/lsp_client.py"
PYTHON = ROOT / ".test-tools/clientvenv/bin/python3"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--vx", type=Path, default=ROOT / "target/release/vx")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    args = ap.parse_args()
    if not PYTHON.exists():
        sys.exit(f"bench/lsp.py: {PYTHON} is missing: run scripts/test's first step (it installs pygls)")
    ws = (args.out / f"lsp-{args.projects}").resolve()
    if not ws.exists():
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--projects", str(args.projects),
                        "--out", str(ws), "--tools", "vx"], check=True, stdout=subprocess.DEVNULL)
    leaf = f"packages/p{args.projects:04d}/vx.toml"
    text = (ws / leaf).read_text()
    broken = text.replace('depends-on = ["^build"]', 'depends-on = ["^build", "no-such-task"]', 1)
    assert broken != text, "the generated vx.toml has no `depends-on = [\"^build\"]`"
    steps = [{"op": "open", "path": leaf}, {"op": "sync"}]
    for _ in range(args.rounds):
        steps.append({"op": "timed_change", "path": leaf, "text": broken, "expect": "no-such-task"})
        steps.append({"op": "timed_change", "path": leaf, "text": text, "expect": ""})
    out = subprocess.run([str(PYTHON), str(CLIENT), str(args.vx.resolve()), str(ws)],
                         input=json.dumps(steps), capture_output=True, text=True, check=True)
    results = json.loads(out.stdout)["results"][2:]
    breaks, mends = results[0::2], results[1::2]
    status = []
    for _ in range(args.rounds):
        started = time.monotonic()
        subprocess.run(["git", "-C", str(ws), "status", "--porcelain", "-uall"], check=True,
                       stdout=subprocess.DEVNULL)
        status.append((time.monotonic() - started) * 1000)

    def cell(xs: list[float]) -> str:
        return f"{statistics.median(xs):.1f} ms ({min(xs):.1f}–{max(xs):.1f})"

    version = subprocess.run([str(args.vx), "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{args.projects} projects, {args.rounds} rounds, {version}, edited `{leaf}`.\n")
    print("| edit | didChange → its diagnostics, median (min–max) |")
    print("|---|---:|")
    print(f"| a `depends-on` entry naming no task | {cell(breaks)} |")
    print(f"| the entry taken out again | {cell(mends)} |")
    print(f"| `git status --porcelain -uall`, for scale | {cell(status)} |")


if __name__ == "__main__":
    main()
