#!/usr/bin/env python3
"""PERF-2 on a real run: vx's wall time against the list schedule that always starts the ready
task with the longest remaining path, computed offline for the same graph, the task durations
vx measured, and the same concurrency.

    python3 bench/schedule.py [--projects 60] [--concurrency 4] [--duration 0.2] [--runs 3]

It generates a layered workspace with bench/generate.py, gives every project one task `work`
(`sleep <duration>`, after `^work`, uncached so it executes every run), runs vx once so history
knows the durations, then measures `--runs` more runs. For each it reads the graph from
`vx run --dry=json` and the run from `--summarize`: the measured wall is from the first task's
start to the last task's end (the run loop's schedule, without planning and the footer); the
reference is the list schedule of the same graph with each task's measured duration. Standard
library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def list_schedule(deps, durations, slots):
    """Makespan of the list schedule preferring the longest remaining path (ties: task id)."""
    dependants = {t: [] for t in deps}
    for t, ds in deps.items():
        for d in ds:
            dependants[d].append(t)
    remaining = {}

    def path(t):
        # Iterative post-order: graphs can be deep.
        stack = [(t, False)]
        while stack:
            node, done = stack.pop()
            if node in remaining:
                continue
            if done:
                remaining[node] = durations[node] + max(
                    (remaining[d] for d in dependants[node]), default=0)
                continue
            stack.append((node, True))
            stack.extend((d, False) for d in dependants[node] if d not in remaining)
        return remaining[t]

    for t in deps:
        path(t)
    pending = {t: len(ds) for t, ds in deps.items()}
    ready = [t for t, n in pending.items() if n == 0]
    running = []  # (end, task)
    now = 0.0
    while ready or running:
        ready.sort(key=lambda t: (-remaining[t], t))
        while ready and len(running) < slots:
            t = ready.pop(0)
            running.append((now + durations[t], t))
        running.sort()
        end, t = running.pop(0)
        now = end
        for d in dependants[t]:
            pending[d] -= 1
            if pending[d] == 0:
                ready.append(d)
    return now


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projects", type=int, default=60)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--duration", type=float, default=0.2, help="seconds each task sleeps")
    ap.add_argument("--runs", type=int, default=3, help="measured runs after the first")
    ap.add_argument("--vx", default=os.environ.get("VX", str(HERE.parent / "target/release/vx")))
    args = ap.parse_args()
    vx = args.vx
    with tempfile.TemporaryDirectory(prefix="vx-perf2-") as tmp:
        ws = Path(tmp) / "ws"
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--projects", str(args.projects),
                        "--out", str(ws), "--tools", "vx", "--no-git"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for toml in ws.glob("packages/*/vx.toml"):
            toml.write_text(f'[tasks.work]\ncommand = "sleep {args.duration}"\n'
                            'depends-on = ["^work"]\n')
        env = dict(os.environ)
        for name in ("CI", "GITHUB_ACTIONS"):
            env.pop(name, None)
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        subprocess.run(["git", "add", "-A"], cwd=ws, check=True)
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "ws"],
                       cwd=ws, check=True)
        base = [vx, "run", "work", "--all", "--concurrency", str(args.concurrency)]
        dry = json.loads(subprocess.run(base + ["--dry=json"], cwd=ws, env=env, check=True,
                                        capture_output=True, text=True).stdout)
        deps = {t["id"]: t["deps"] for t in dry["tasks"]}
        subprocess.run(base, cwd=ws, env=env, check=True, stdout=subprocess.DEVNULL)
        ratios = []
        for n in range(args.runs):
            out = Path(tmp) / f"run{n}.json"
            subprocess.run(base + [f"--summarize={out}"], cwd=ws, env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            summary = json.loads(out.read_text())
            tasks = {t["id"]: t for t in summary["tasks"]}
            durations = {t: tasks[t]["duration_ms"] for t in deps}
            start = min(t["start_offset_ms"] for t in tasks.values())
            wall = max(t["end_offset_ms"] for t in tasks.values()) - start
            best = list_schedule(deps, durations, args.concurrency)
            ratios.append(wall / best)
            print(f"run {n + 1}: {len(deps)} tasks, {args.concurrency} slots: wall {wall} ms, "
                  f"list schedule {best:.0f} ms, ratio {wall / best:.4f} "
                  f"({(wall / best - 1) * 100:+.2f}%)")
        print(f"median ratio {statistics.median(ratios):.4f}")


if __name__ == "__main__":
    main()
