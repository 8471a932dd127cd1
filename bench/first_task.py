#!/usr/bin/env python3
"""Time to first task (issue 49): from exec to the first task's command starting, on a cold
cache, vx and Turborepo side by side on the same generated workspace.

    bench/install.sh                      # pinned turbo under bench/node_modules
    cargo build --release -p vx-run --bin vx
    python3 bench/first_task.py --sizes 1000,5000 [--runs 5]

For each size: one workspace from bench/generate.py (vx and turbo flavours, one commit), one
clone per tool. Every task's command (vx.toml `command`, package.json script) is prefixed with
`date +%s%N >> <stamps>` and committed, so the first line of the stamps file is the moment the
first task's shell started. Each run starts cold (every `dist/`, `.vx/` and `.turbo/` deleted),
records the clock just before exec, and stops the tool (its whole process group) once a stamp
is there: the time to first task is that stamp less the exec time. The tools alternate within
each repetition. turbo runs its scripts through bench/npm-shim (`sh -c`, as vx does), not
`npm run`, which would add a Node start-up per task. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import BENCH, REPO, RUN_ENV, log, quiet, turbo_binary  # noqa: E402

TOOLS = ("vx", "turbo")


def prefix_commands(ws: Path, stamps: Path) -> None:
    """Every task command starts by appending the time to `stamps`; committed."""
    stamp = f"date +%s%N >> {stamps}; "
    for toml in ws.glob("packages/*/vx.toml"):
        text = toml.read_text()
        toml.write_text(text.replace('command = "', f'command = "{stamp}'))
    script = re.compile(r'^( *"(?:build|test|lint)": ")', re.M)
    for manifest in ws.glob("packages/*/package.json"):
        text = manifest.read_text()
        manifest.write_text(script.sub(lambda m: m.group(1) + stamp, text))
    quiet(["git", "commit", "-qam", "stamp each task's start"], ws)


def clean(ws: Path) -> None:
    for dist in ws.glob("packages/*/dist"):
        subprocess.run(["rm", "-rf", str(dist)], check=True)
    for cache in (".vx", ".turbo"):
        subprocess.run(["rm", "-rf", str(ws / cache)], check=True)


def first_task(argv: list[str], cwd: Path, env: dict, stamps: Path, timeout: float) -> float:
    """Seconds from exec to the first stamp; the tool is stopped once it is there."""
    stamps.write_text("")
    started = time.time_ns()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while True:
            text = stamps.read_text()
            if text.strip():
                first = int(text.split()[0])
                return (first - started) / 1e9
            if proc.poll() is not None:
                raise SystemExit(f"{argv[0]} exited ({proc.returncode}) before any task started")
            if time.monotonic() > deadline:
                raise SystemExit(f"{argv[0]}: no task started within {timeout}s")
            time.sleep(0.002)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,5000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--vx", type=Path, default=REPO / "target" / "release" / "vx")
    ap.add_argument("--out", type=Path, default=BENCH / "out" / "first-task")
    args = ap.parse_args()
    turbo = turbo_binary()
    env = {**os.environ, **RUN_ENV, "VX_LOG": "off"}
    turbo_env = {**env, "PATH": f"{BENCH / 'npm-shim'}:{env.get('PATH', '')}"}
    vx = args.out / "vx"
    args.out.mkdir(parents=True, exist_ok=True)
    quiet(["cp", str(args.vx), str(vx)], REPO)
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        base = args.out / f"ws-{n}"
        quiet([sys.executable, str(BENCH / "generate.py"), "--projects", str(n), "--out",
               str(base), "--tools", "vx,turbo", "--force"], REPO)
        copies = {}
        for tool in TOOLS:
            copy = args.out / f"ws-{n}-{tool}"
            quiet(["rm", "-rf", str(copy)], REPO)
            quiet(["git", "clone", "-q", str(base), str(copy)], REPO)
            stamps = args.out / f"stamps-{n}-{tool}"
            prefix_commands(copy, stamps)
            copies[tool] = (copy, stamps)
        argv = {
            "vx": [str(vx), "run", "build", "--all", "--output-logs=none"],
            "turbo": [str(turbo), "run", "build", "--output-logs=none", "--ui=stream"],
        }
        times: dict[str, list[float]] = {tool: [] for tool in TOOLS}
        for r in range(args.runs + 1):
            for tool in TOOLS:
                copy, stamps = copies[tool]
                clean(copy)
                seconds = first_task(argv[tool], copy, turbo_env if tool == "turbo" else env,
                                     stamps, 120)
                if r > 0:  # the first round warms the page cache
                    times[tool].append(seconds)
                log(f"{n} projects, {tool}: {seconds * 1000:.0f} ms")
        rows.append((n, times))
    print("| projects | vx | turbo | vx ÷ turbo |")
    print("|---|---|---|---|")
    for n, times in rows:
        cell = {t: (statistics.median(v), min(v), max(v)) for t, v in times.items()}
        shown = {t: f"{m * 1000:.0f} ms ({lo * 1000:.0f}–{hi * 1000:.0f})" for t, (m, lo, hi) in cell.items()}
        ratio = cell["vx"][0] / cell["turbo"][0]
        print(f"| {n:,} | {shown['vx']} | {shown['turbo']} | {ratio:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
