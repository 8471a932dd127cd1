#!/usr/bin/env python3
"""Each tool at its own defaults (issue 49): the wall time of `build` across 50 generated
projects whose tasks wait (I/O-bound: they print progress every 100 ms for 0.6–1.8 s) or compute
(CPU-bound: a fixed amount of arithmetic, 0.6–1.8 s of one core), vx against Turborepo and Nx,
and against vx's own fixed `--concurrency` values.

    bench/install.sh                      # pinned turbo and nx under bench/node_modules
    cargo build --release -p vx-run --bin vx
    python3 bench/defaults.py [--runs 3] [--fixed 2,4,8,12] [--kinds io,cpu]

One workspace from bench/generate.py (50 projects in 7 layers, `build` depending on `^build`),
its build command replaced, for every tool alike, by `sh ../../work.sh <kind>`: the script
takes the task's duration from its project's number (0.6 + (n·37 mod 13)/10 s). The CPU-bound
kind's arithmetic is calibrated once, on this machine, to that many seconds of one core. Every
run executes every task (`vx --force`, `turbo --force`, `nx --skip-nx-cache`); the tools
alternate within each repetition, after one warm-up round. turbo and Nx run their commands
through bench/npm-shim where they would start `npm`. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import (BENCH, REPO, RUN_ENV, log, nx_entry, package_version, quiet,  # noqa: E402
                     run_measured, turbo_binary)

OLD_COMMAND = "mkdir -p dist && cp src/* dist/"

WORK = """\
#!/bin/sh
# bench/defaults.py's task: `sh work.sh io|cpu`, from a project's directory. Its duration
# comes from the project's number: 0.6 + (n*37 mod 13)/10 seconds.
n=$(basename "$PWD" | tr -dc 0-9 | sed 's/^0*//')
tenths=$(( 6 + (${n:-0} * 37 % 13) ))
case "$1" in
io)
    i=0
    while [ $i -lt $tenths ]; do echo "progress $i/$tenths"; sleep 0.1; i=$((i + 1)); done ;;
cpu)
    awk -v n=$(( tenths * RATE_PER_TENTH )) 'BEGIN { for (i = 0; i < n; i++) s += i % 7; print s }' ;;
esac
"""


def calibrate() -> int:
    """awk loop iterations per tenth of a second of one core here."""
    n = 2_000_000
    started = time.perf_counter()
    subprocess.run(["awk", "-v", f"n={n}", "BEGIN { for (i = 0; i < n; i++) s += i % 7; print s }"],
                   check=True, capture_output=True)
    seconds = time.perf_counter() - started
    return max(1, int(n / seconds / 10))


def make_workspace(out: Path, kind: str, rate: int) -> Path:
    base = out / f"ws-{kind}"
    quiet([sys.executable, str(BENCH / "generate.py"), "--projects", "50", "--out", str(base),
           "--tools", "vx,turbo,nx", "--force"], REPO)
    command = f"sh ../../work.sh {kind}"
    for path in [base / "nx.json", *base.glob("packages/*/vx.toml"), *base.glob("packages/*/package.json")]:
        text = path.read_text()
        path.write_text(text.replace(OLD_COMMAND, command))
    (base / "work.sh").write_text(WORK.replace("RATE_PER_TENTH", str(rate)))
    quiet(["git", "add", "-A"], base)
    quiet(["git", "commit", "-qm", f"{kind}-bound builds"], base)
    return base


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fixed", default="2,4,8,12", help="vx's fixed --concurrency values")
    ap.add_argument("--kinds", default="io,cpu")
    ap.add_argument("--vx", type=Path, default=REPO / "target" / "release" / "vx")
    ap.add_argument("--out", type=Path, default=BENCH / "out" / "defaults")
    ap.add_argument("--real", type=Path,
                    help="instead of the generated workspaces: a checkout with vx.toml and Nx set "
                         "up and its packages installed; `build` of every package, by vx and by "
                         "its own `nx run-many` (exclusions via --nx-args)")
    ap.add_argument("--nx-args", default="", help="added to nx run-many (with --real)")
    ap.add_argument("--vx-args", default="--all", help="the selection vx runs build over (with --real)")
    args = ap.parse_args()
    if args.real:
        return real(args)
    args.out.mkdir(parents=True, exist_ok=True)
    vx = args.out / "vx"
    quiet(["cp", str(args.vx), str(vx)], REPO)
    turbo, nx = turbo_binary(), nx_entry()
    env = {**os.environ, **RUN_ENV, "VX_LOG": "off"}
    shimmed = {**env, "PATH": f"{BENCH / 'npm-shim'}:{env.get('PATH', '')}"}
    rate = calibrate()
    log(f"calibrated: {rate} iterations per tenth of a second")
    fixed = [int(c) for c in args.fixed.split(",") if c]
    tables = []
    for kind in args.kinds.split(","):
        base = make_workspace(args.out, kind, rate)
        runners: dict[str, tuple[list[str], dict]] = {
            "vx": ([str(vx), "run", "build", "--all", "--force"], env),
            "turbo": ([str(turbo), "run", "build", "--force", "--ui=stream"], shimmed),
            "nx": ([env.get("NODE", "node"), str(nx), "run-many", "-t", "build", "--skip-nx-cache",
                    "--outputStyle=static"], shimmed),
        }
        for c in fixed:
            runners[f"vx -j{c}"] = ([str(vx), "run", "build", "--all", "--force",
                                     f"--concurrency={c}"], env)
        copies = {}
        for name in runners:
            copy = args.out / f"ws-{kind}-{name.replace(' ', '')}"
            quiet(["rm", "-rf", str(copy)], REPO)
            quiet(["git", "clone", "-q", str(base), str(copy)], REPO)
            copies[name] = copy
        measured = rounds({name: (argv, copies[name], tool_env)
                           for name, (argv, tool_env) in runners.items()}, args, kind, 900)
        if measured is None:
            return 1
        walls, peaks = measured
        best_fixed = min(statistics.median(walls[f"vx -j{c}"]) for c in fixed) if fixed else None
        best = min([statistics.median(walls["turbo"]), statistics.median(walls["nx"])]
                   + ([best_fixed] if best_fixed else []))
        lines = [f"### {kind}-bound, 50 projects", "",
                 "| runner | wall, median (min–max) | ÷ best of turbo, nx, vx fixed | peak RSS of the tree |",
                 "|---|---|---|---|"]
        for name, times in walls.items():
            m = statistics.median(times)
            lines.append(f"| {name} | {m:.2f} s ({min(times):.2f}–{max(times):.2f}) | "
                         f"{m / best:.2f}× | {statistics.median(peaks[name]) / 1024:.0f} MiB |")
        tables.append("\n".join(lines))
    header = (f"vx defaults benchmark, {time.strftime('%Y-%m-%d %H:%M')}, "
              f"turbo {package_version('turbo')}, nx {package_version('nx')}, {args.runs} runs, "
              f"CPU calibration {rate} awk iterations per 0.1 s")
    text = header + "\n\n" + "\n\n".join(tables)
    print(text)
    (args.out / f"defaults-{time.strftime('%Y%m%d-%H%M%S')}.md").write_text(text + "\n")
    return 0


def rounds(runners: dict[str, tuple[list[str], Path, dict]], args: argparse.Namespace, label: str,
           timeout: float) -> tuple[dict[str, list[float]], dict[str, list[int]]] | None:
    """Every runner (argv, where, environment) once per round, alternating; a warm-up round,
    then `args.runs` measured. Their walls and tree peaks (KiB), or None when one failed."""
    walls: dict[str, list[float]] = {name: [] for name in runners}
    peaks: dict[str, list[int]] = {name: [] for name in runners}
    for r in range(args.runs + 1):
        for name, (argv, cwd, env) in runners.items():
            result = run_measured(argv, cwd, env, args.out / "out.txt", args.out / "err.txt", timeout)
            if result["exit"] != 0:
                log(f"{name} failed (exit {result['exit']}): see {args.out / 'err.txt'}")
                return None
            log(f"{label}, {name}: {result['wall']:.2f} s (run {r}{', warm-up' if r == 0 else ''})")
            if r > 0:
                walls[name].append(result["wall"])
                peaks[name].append(result["maxrss_kib"])
    return walls, peaks


def real(args: argparse.Namespace) -> int:
    """A real repository's build, in place: vx at its default and at fixed counts, and the
    repository's own Nx (its nx.json's `parallel`, or Nx's default)."""
    repo = args.real.resolve()
    env = {**os.environ, **RUN_ENV, "VX_LOG": "off"}
    fixed = [int(c) for c in args.fixed.split(",") if c]
    vx = [str(args.vx), "run", "build", *args.vx_args.split(), "--force"]
    runners = {"vx": vx, "nx": [str(repo / "node_modules" / ".bin" / "nx"), "run-many", "-t", "build",
                                "--skip-nx-cache", "--outputStyle=static", *args.nx_args.split()]}
    for c in fixed:
        runners[f"vx -j{c}"] = [*vx, f"--concurrency={c}"]
    measured = rounds({name: (argv, repo, env) for name, argv in runners.items()}, args,
                      repo.name, 1800)
    if measured is None:
        return 1
    walls, _ = measured
    best = min(statistics.median(t) for n, t in walls.items() if n != "vx")
    lines = [f"### {repo.name} build ({git_head(repo)})", "", "| runner | wall, median (min–max) | ÷ best |",
             "|---|---|---|"]
    for name, times in walls.items():
        m = statistics.median(times)
        lines.append(f"| {name} | {m:.2f} s ({min(times):.2f}–{max(times):.2f}) | {m / best:.2f}× |")
    print("\n".join(lines))
    return 0


def git_head(repo: Path) -> str:
    return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=repo, capture_output=True,
                          text=True).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
