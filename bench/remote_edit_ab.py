#!/usr/bin/env python3
"""A real change at a distance, A/B: two vx binaries alternating on the same server.

    cargo build --release -p vx-run -p vx-test-support --bin vx --bin vx-latency-proxy
    python3 bench/remote_edit_ab.py --old /path/to/an/older/vx [--new target/release/vx]
                                    [--projects 600] [--rtt-ms 20] [--runs 4]

One workspace from bench/generate.py and one turborepo-remote-cache (as bench/remote.py
starts it). Each binary fills the server from its own clone (`CI=true`: results and, for a vx
with early cutoff, its outputs records). Then, `--runs` times and alternating which goes
first, each binary runs `build --all --concurrency 2` with `CI=true` in a fresh clone whose core
library (the project with the largest closure) has new content, through `vx-latency-proxy` at
`--rtt-ms`: what does not depend on the core is restored from the server, the core's closure
runs and goes up. Prints each run and the medians (min–max); every run must execute the same
number of tasks. Standard library only.
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
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import remote as R  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True)
    ap.add_argument("--new", type=Path, default=R.REPO / "target" / "release" / "vx")
    ap.add_argument("--projects", type=int, default=600)
    ap.add_argument("--rtt-ms", type=int, default=20)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--proxy", type=Path,
                    default=R.REPO / "target" / "release" / "vx-latency-proxy")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vx-bench-edit-ab-"))
    try:
        bins = {"old": work / "vx-old", "new": work / "vx-new"}
        shutil.copy2(args.old, bins["old"])
        shutil.copy2(args.new, bins["new"])
        origin = work / "origin"
        subprocess.run([sys.executable, str(BENCH / "generate.py"), "--projects",
                        str(args.projects), "--out", str(origin), "--tools", "vx,turbo"],
                       check=True, stdout=subprocess.DEVNULL)
        server, url = R.start_server(work / "store")
        proxy = None
        try:
            with open(origin / "vx.toml", "a") as f:
                f.write(f'\n[workspace.remote-cache]\nurl = "{url}"\nteam = "{R.TEAM}"\n')
            subprocess.run(["git", "commit", "-qam", "remote cache"], cwd=origin, check=True)
            base = {k: v for k, v in os.environ.items() if not k.startswith(("TURBO_", "VX_"))}
            env = {**base, "VX_REMOTE_CACHE_TOKEN": R.TOKEN, "CI": "true"}
            run = ["build", "--all", "--concurrency=2"]
            for name, vx in bins.items():
                R.timed([str(vx), "run", *run], R.clone(origin, work / f"fill-{name}"), env)
            proxy, far = R.start_proxy(args.proxy, url, args.rtt_ms)
            graph = R.Workspace(origin)
            core = graph.dir[graph.core]
            walls: dict[str, list[float]] = {"old": [], "new": []}
            executed = set()
            for r in range(args.runs):
                for name in (["old", "new"] if r % 2 == 0 else ["new", "old"]):
                    ws = R.edited(R.clone(origin, work / f"{name}-{r}"), core,
                                  f"changed {name} {r}\n")
                    summary = ws / "summary.json"
                    wall = R.timed([str(bins[name]), "run", *run, f"--summarize={summary}"],
                                   ws, {**env, "VX_REMOTE_CACHE_URL": far})
                    counts = json.loads(summary.read_text())["counts"]
                    executed.add(counts["executed"])
                    walls[name].append(wall)
                    print(f"{name}  {wall:.3f} s  executed {counts['executed']}, "
                          f"restored {counts['restored_remote']}", flush=True)
            if len(executed) != 1:
                sys.exit(f"the runs executed different numbers of tasks: {sorted(executed)}")
            print(f"{args.projects} projects, core `{graph.core}` edited, +{args.rtt_ms} ms:")
            for name, w in walls.items():
                print(R.summary(name, w))
            print(f"new / old: {statistics.median(walls['new']) / statistics.median(walls['old']):.2f}")
        finally:
            if proxy:
                proxy.kill()
            server.kill()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
