#!/usr/bin/env python3
"""Remote execution scale-out, measured (issue 24): 200 tasks that each sleep 1 s on a generated
graph, run locally at `--concurrency 2` and remotely on BuildGrid with 16 workers
(`max-in-flight = 16`), against the ideal schedule of the same graph on 16 workers; and vx's
added latency per remote action.

    scripts/test            (installs BuildGrid, PostgreSQL and buildbox-run into .test-tools)
    cargo build --release -p vx-run -p vx-test-support --bin vx --bin reapi-engine
    python3 bench/remote_exec.py [--tasks 200] [--workers 16] [--max-in-flight 16] [--rounds 3]

The workspace: `--tasks` projects with one `build` each (`sleep 1`, one output file), each
depending on up to two of the 100 projects before it (a fixed seed), so the graph has both width
and depth. The engine is `reapi-engine` (the test harness's BuildGrid with its PostgreSQL scheduler
and bots that run each action with `buildbox-run` in bubblewrap), all on this machine: the
workers sleep, so 16 of them fit on 2 cores.

Per round, alternating which goes first, each from a fresh clone (no local cache, no outputs):

  local   `vx run build --all --concurrency 2 --remote-exec=off`
  remote  `vx run build --all --concurrency 2` with the tasks `remote = true`; `--force` keeps
          BuildGrid's action cache from answering (every action runs again)

The ideal schedule is the list schedule of the graph with every task taking its measured
duration (1 s) on 16 workers, computed here. The added latency per remote action is a one-task
workspace whose task is `true`: the median wall of `vx run` remote minus the median local, over
`--rounds` × 5 runs each, on BuildGrid (which includes its scheduling: a job waits for its
assigner and its bot) and on `buildbox-casd` with its local runner (no scheduler: what vx's
client, the upload, `Execute` and one bubblewrap launch cost). Also printed: vx's own CPU, the
engine's (BuildGrid, PostgreSQL, the bots and their runners) and how busy the machine was.
Prints medians with the minimum and maximum. Standard library only.
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def graph(tasks: int, seed: int = 24) -> list[list[int]]:
    """Each task's dependencies: up to two of the 100 tasks before it."""
    rng = random.Random(seed)
    deps = []
    for i in range(tasks):
        window = list(range(max(0, i - 100), i))
        deps.append(sorted(rng.sample(window, min(len(window), rng.choice([0, 1, 1, 2])))))
    return deps


def workspace(root: Path, deps: list[list[int]], url: str, command: str,
              in_flight: int = 16) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".vx/\ndist/\n")
    (root / "vx.toml").write_text(
        '[workspace]\nmembers = ["packages/*"]\n\n[workspace.remote-execution]\n'
        f'url = "{url}"\nplatform = {{ OSFamily = "linux", pool = "bench" }}\n'
        f'max-in-flight = {in_flight}\n')
    for i, ds in enumerate(deps):
        p = root / "packages" / f"p{i:03}"
        (p / "src").mkdir(parents=True)
        depends = ", ".join(f'"p{d:03}#build"' for d in ds)
        (p / "package.json").write_text(f'{{ "name": "p{i:03}", "version": "1.0.0" }}\n')
        (p / "src" / "main.txt").write_text(f"p{i:03}\n")
        (p / "vx.toml").write_text(
            f'[tasks.build]\ncommand = "{command}"\ndepends-on = [{depends}]\nremote = true\n'
            'cache = { inputs = ["src/**"], outputs = ["dist/**"] }\n')
    git(root, "add", "-A")
    git(root, "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "bench")


def list_schedule(deps: list[list[int]], duration: float, workers: int) -> float:
    """The wall of the list schedule (longest remaining path first) of `deps` on `workers`."""
    n = len(deps)
    dependants = [[] for _ in range(n)]
    for i, ds in enumerate(deps):
        for d in ds:
            dependants[d].append(i)
    rest = [0.0] * n
    for i in reversed(range(n)):
        rest[i] = duration + max((rest[d] for d in dependants[i]), default=0.0)
    pending = [len(ds) for ds in deps]
    ready = [(-rest[i], i) for i in range(n) if pending[i] == 0]
    heapq.heapify(ready)
    running: list[tuple[float, int]] = []
    now = 0.0
    done = 0
    while done < n:
        while ready and len(running) < workers:
            _, i = heapq.heappop(ready)
            heapq.heappush(running, (now + duration, i))
        now, i = heapq.heappop(running)
        done += 1
        for d in dependants[i]:
            pending[d] -= 1
            if pending[d] == 0:
                heapq.heappush(ready, (-rest[d], d))
    return now


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system, own and of reaped children) of `root` and its live
    descendants: the engine's processes (BuildGrid, PostgreSQL, the bots and, reaped by the
    bots, their runners)."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        cpu[pid] = sum(int(f) for f in fields[11:15]) / tick
    total = 0.0
    for pid in cpu:
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            total += cpu[pid]
    return total


def busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs so far, from /proc/stat."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def timed(vx: str, cwd: Path, args: list[str], usage: dict | None = None) -> float:
    """Runs `vx run args`; its wall time. With `usage`, appends vx's own CPU seconds, the
    engine's, and the machine's CPU use (0–1) over the run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    engine_before = tree_cpu(usage["engine"]) if usage else 0.0
    busy_before = busy()
    start = time.perf_counter()
    done = subprocess.run([vx, "run", *args], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if usage is not None:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        usage.setdefault("vx", []).append(after.ru_utime - before.ru_utime
                                          + after.ru_stime - before.ru_stime)
        usage.setdefault("engine cpu", []).append(tree_cpu(usage["engine"]) - engine_before)
        b, t = busy()
        usage.setdefault("machine", []).append((b - busy_before[0]) / max(1, t - busy_before[1]))
    if done.returncode != 0:
        sys.exit(f"vx failed in {cwd}: {done.stdout.decode()[-2000:]}{done.stderr.decode()[-2000:]}")
    if b"remote tasks run locally" in done.stderr:
        sys.exit(f"the engine was not used: {done.stderr.decode()[-2000:]}")
    return wall


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-in-flight", type=int, default=16)
    ap.add_argument("--vx", default=str(REPO / "target" / "release" / "vx"))
    ap.add_argument("--engine", default=str(REPO / "target" / "release" / "reapi-engine"))
    args = ap.parse_args()
    engine = subprocess.Popen([args.engine, str(args.workers), "bench"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    url = engine.stdout.readline().strip()
    if not url.startswith("grpc://"):
        sys.exit("reapi-engine did not start (is BuildGrid installed? run scripts/test)")
    log(f"engine: BuildGrid with {args.workers} workers at {url}")
    deps = graph(args.tasks)
    with tempfile.TemporaryDirectory(prefix="vx-remote-exec-") as tmp:
        tmp = Path(tmp)
        origin = tmp / "origin"
        workspace(origin, deps, url, "sleep 1 && mkdir -p dist && cp src/main.txt dist/",
                  args.max_in_flight)
        trivial = tmp / "trivial"
        workspace(trivial, [[]], url, "true")
        walls: dict[str, list[float]] = {"local": [], "remote": []}
        usage: dict[str, dict] = {"local": {"engine": engine.pid}, "remote": {"engine": engine.pid}}
        clones = 0

        def fresh(source: Path) -> Path:
            nonlocal clones
            clones += 1
            into = tmp / f"clone{clones}"
            subprocess.run(["git", "clone", "-q", str(source), str(into)], check=True)
            return into

        for r in range(args.rounds):
            order = ["local", "remote"] if r % 2 == 0 else ["remote", "local"]
            for kind in order:
                cwd = fresh(origin)
                flags = ["build", "--all", "--concurrency", "2", "--force"]
                if kind == "local":
                    flags.append("--remote-exec=off")
                wall = timed(args.vx, cwd, flags, usage[kind])
                walls[kind].append(wall)
                log(f"round {r + 1}: {kind} {wall:.2f} s")
        one = fresh(trivial)
        casd = subprocess.Popen([args.engine, "casd"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        casd_url = casd.stdout.readline().strip()
        if not casd_url.startswith("grpc://"):
            sys.exit("reapi-engine casd did not start (is buildbox-casd installed? run scripts/test)")
        on_casd = fresh(trivial)
        config = (on_casd / "vx.toml").read_text().replace(url, casd_url)
        (on_casd / "vx.toml").write_text(config)
        latency: dict[str, list[float]] = {"local": [], "remote": [], "casd": []}
        for r in range(args.rounds * 5):
            for kind in (["local", "remote", "casd"] if r % 2 == 0 else ["casd", "remote", "local"]):
                flags = ["build", "--all", "--force"]
                if kind == "local":
                    flags.append("--remote-exec=off")
                latency[kind].append(timed(args.vx, on_casd if kind == "casd" else one, flags))
        casd.stdin.close()
        casd.wait(timeout=60)
        ideal16 = list_schedule(deps, 1.0, args.workers)
        ideal2 = list_schedule(deps, 1.0, 2)
        critical = list_schedule(deps, 1.0, args.tasks)
        remote = statistics.median(walls["remote"])
        local = statistics.median(walls["local"])
        added = statistics.median(latency["remote"]) - statistics.median(latency["local"])
        added_casd = statistics.median(latency["casd"]) - statistics.median(latency["local"])
        print(f"graph: {args.tasks} tasks of 1 s, critical path {critical:.0f} tasks")
        print(f"local, --concurrency 2:          {spread(walls['local'])}  (ideal on 2: {ideal2:.0f} s)")
        print(f"remote, {args.workers} BuildGrid workers:   {spread(walls['remote'])}  (ideal on {args.workers}: {ideal16:.0f} s)")
        print(f"local ÷ remote:                  {local / remote:.2f}")
        print(f"remote ÷ ideal on {args.workers}:          {remote / ideal16:.2f}  (target ≤ 1.20)")
        for kind in ("local", "remote"):
            u = usage[kind]
            print(f"{kind}: vx CPU {statistics.median(u['vx']):.1f} s, engine CPU "
                  f"{statistics.median(u['engine cpu']):.1f} s, machine busy "
                  f"{statistics.median(u['machine']) * 100:.0f}%")
        print(f"one trivial task: local {spread(latency['local'])}, on BuildGrid "
              f"{spread(latency['remote'])}, on casd {spread(latency['casd'])}")
        print(f"added latency per remote action: {added * 1000:.0f} ms on BuildGrid, "
              f"{added_casd * 1000:.0f} ms on casd")
    engine.stdin.close()
    engine.wait(timeout=60)


if __name__ == "__main__":
    main()
