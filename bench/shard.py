#!/usr/bin/env python3
"""One run split across N runners with `--shard K/N`, against moon's rule (a modulo over the task
list), on one turborepo-remote-cache.

    scripts/test (installs turborepo-remote-cache into .test-tools/npm)
    cargo build --release -p vx-run --bin vx
    python3 bench/shard.py --projects 500 --shards 2,4,8

A workspace from bench/generate.py whose `build` commands sleep first: a heavy tail, seeded (most
tasks 20-80 ms, one in 25 a full 0.5-1.5 s), so that two cores do not bound the speed-up and a
split by count meets long tasks. Each runner is a clone with no `.vx/`, at `--concurrency 1`
(so that a part's wall is its work plus its waits, and the ideal is the total work ÷ N, or the
critical path when that is longer). For each N:

  vx      N processes at once, `vx run build --all --shard=K/N --summarize=…`
  modulo  N processes at once, runner K running `vx run <ids>` for the tasks whose position in
          the sorted task list is K-1 modulo N (moon's `moon ci --job/--jobTotal` rule), the same
          engine and cache, only the split differs; what a runner needs of another is restored
          if it was uploaded already, else executed again

The total work and the critical path come from one runner's run of everything (`--shard=1/1
--summarize`, the sum and the longest chain of its tasks' durations). That run is also the
history: it records the tasks' durations in the remote cache, as the parts of an earlier sharded
run of the branch would, and every measured run starts at a new commit that adds a file to every
project's sources (so nothing is restored from an earlier run) on fresh clones with no `.vx/`.
Each (N, split) is run `--runs` times: the median of the slowest runner's wall, with min–max. Reported: the slowest runner's wall ÷ the
ideal, and tasks executed by more than one runner (from the summaries). Outputs are checked:
each task's `dist/` on the runner that executed it equals the one-runner build's. Standard
library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
import remote  # noqa: E402  (the server and clone helpers)


def durations(n: int, seed: int) -> list[float]:
    """Seconds each project's build sleeps: SplitMix64, so the same on every machine."""
    state = seed
    out = []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        u = ((z ^ (z >> 31)) % 1_000_000) / 1_000_000
        out.append(0.5 + u * 25 if u < 0.04 else 0.02 + u * 0.06)
    return out


def make(work: Path, projects: int, seed: int) -> Path:
    origin = work / "origin"
    subprocess.run([sys.executable, str(BENCH / "generate.py"), "--projects", str(projects),
                    "--out", str(origin), "--tools", "vx"], check=True, stdout=subprocess.DEVNULL)
    dirs = sorted((origin / "packages").iterdir())
    for pdir, seconds in zip(dirs, durations(len(dirs), seed)):
        toml = pdir / "vx.toml"
        text = toml.read_text()
        toml.write_text(text.replace('command = "mkdir -p dist', f'command = "sleep {seconds:.3f} && mkdir -p dist', 1))
    subprocess.run(["git", "-c", "user.email=b@vx", "-c", "user.name=b", "commit", "-qam", "sleeps"],
                   cwd=origin, check=True)
    return origin


def summary(path: Path) -> dict:
    return json.loads(path.read_text())


def executed(doc: dict) -> list[str]:
    return [t["id"] for t in doc["tasks"] if t.get("attempts", 0) > 0]


def one_runner(work: Path, origin: Path, vx: str, env: dict) -> tuple[float, float, dict]:
    """Total work and critical path (seconds) of everything on one runner, and its summary; its
    durations go to the remote cache's record of the branch."""
    clone = remote.clone(origin, work / "single")
    out = work / "single.json"
    subprocess.run([vx, "run", "build", "--all", "--concurrency=1", "--shard=1/1", f"--summarize={out}"],
                   cwd=clone, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    doc = summary(out)
    total = sum(t["duration_ms"] for t in doc["tasks"]) / 1000
    return total, doc["critical_path"]["duration_ms"] / 1000, doc


def at_once(runs: list[tuple[list[str], Path]], env: dict) -> list[float]:
    """Starts every run at once; each one's wall."""
    start = time.perf_counter()
    procs = [subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for argv, cwd in runs]
    walls = []
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"a runner failed: {err.decode(errors='replace')[-2000:]}")
        walls.append(time.perf_counter() - start)
    return walls


def bump(origin: Path, label: str) -> None:
    """A new commit adding `src/rev.txt` to every project: every build's key changes."""
    for pdir in sorted((origin / "packages").iterdir()):
        (pdir / "src" / "rev.txt").write_text(f"{label}\n")
    subprocess.run(["git", "add", "-A"], cwd=origin, check=True)
    subprocess.run(["git", "-c", "user.email=b@vx", "-c", "user.name=b", "commit", "-qm", label],
                   cwd=origin, check=True)


def check_outputs(single: Path, runner: Path, ids: list[str]) -> None:
    for task_id in ids:
        project = task_id.split("#")[0].split("/")[-1]
        a = single / "packages" / project / "dist"
        b = runner / "packages" / project / "dist"
        for f in sorted(a.iterdir()):
            if (b / f.name).read_bytes() != f.read_bytes():
                sys.exit(f"{task_id}: {f.name} differs from the one-runner build")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", type=int, default=500)
    ap.add_argument("--shards", default="2,4,8")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--vx", default=str(REPO / "target" / "release" / "vx"))
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    vx = str(Path(args.vx).resolve())
    work = Path(tempfile.mkdtemp(prefix="vx-bench-shard-"))
    server = None
    try:
        origin = make(work, args.projects, args.seed)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("VX_", "GITHUB_", "CI"))}
        server, url = remote.start_server(work / "store")
        env = {**base, "CI": "true", "VX_REMOTE_CACHE_URL": url,
               "VX_REMOTE_CACHE_TEAM": remote.TEAM, "VX_REMOTE_CACHE_TOKEN": remote.TOKEN}
        total, path, single = one_runner(work, origin, vx, env)
        ids = sorted(t["id"] for t in single["tasks"])
        print(f"{args.projects} projects, {len(ids)} tasks: work {total:.1f} s on one runner, "
              f"critical path {path:.1f} s; {args.runs} runs of each")
        print(f"{'N':>3}  {'split':<7} {'slowest':>8} {'ideal':>7} {'÷ ideal (min–max)':>20} {'twice':>12}")
        for n in [int(x) for x in args.shards.split(",")]:
            ideal = max(total / n, path)
            for how in ("vx", "modulo"):
                slowest_runs = []
                twice_runs = []
                for r in range(args.runs):
                    bump(origin, f"{how}-{n}-{r}")
                    runs = []
                    files = []
                    for k in range(1, n + 1):
                        clone = remote.clone(origin, work / f"{how}-{n}-{r}-{k}")
                        out = work / f"{how}-{n}-{r}-{k}.json"
                        files.append((clone, out))
                        if how == "vx":
                            argv = [vx, "run", "build", "--all", "--concurrency=1",
                                    f"--shard={k}/{n}", f"--summarize={out}"]
                        else:
                            mine = [t for i, t in enumerate(ids) if i % n == k - 1]
                            argv = [vx, "run", *mine, "--concurrency=1", f"--summarize={out}"]
                        runs.append((argv, clone))
                    walls = at_once(runs, env)
                    ran: dict[str, int] = {}
                    for clone, out in files:
                        done = executed(summary(out))
                        check_outputs(work / "single", clone, done)
                        for task_id in done:
                            ran[task_id] = ran.get(task_id, 0) + 1
                    missing = [t for t in ids if t not in ran]
                    if missing:
                        sys.exit(f"{how} N={n}: never executed: {missing[:5]}")
                    twice_runs.append(100 * sum(c - 1 for c in ran.values()) / len(ids))
                    slowest_runs.append(max(walls))
                    for clone, _ in files:
                        shutil.rmtree(clone, ignore_errors=True)
                slowest = statistics.median(slowest_runs)
                spread = f"{min(slowest_runs) / ideal:.2f}–{max(slowest_runs) / ideal:.2f}"
                twice = f"{statistics.median(twice_runs):.1f}% ({min(twice_runs):.0f}–{max(twice_runs):.0f})"
                print(f"{n:>3}  {how:<7} {slowest:>7.2f}s {ideal:>6.2f}s {slowest / ideal:>7.2f}× ({spread}) "
                      f"{twice:>12}", flush=True)
    finally:
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
