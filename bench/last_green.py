#!/usr/bin/env python3
"""What `--affected=last-green` costs a CI run, against naming the same base by hand.

    scripts/test (installs turborepo-remote-cache into .test-tools/npm)
    cargo build --release -p vx-run -p vx-test-support --bin vx --bin vx-latency-proxy
    python3 bench/last_green.py --projects 200 --rounds 7 --latency-ms 0,20,100

One workspace from bench/generate.py, committed; the remote cache is a local
turborepo-remote-cache named by `VX_REMOTE_CACHE_URL` and `VX_REMOTE_CACHE_TEAM`, as docs/ci.md's
recipes name it. Two runner clones, A and B, each filled by one `vx run build
--all` (B's with `--affected=last-green`, which records its commit as green in the remote
cache). Then per round the origin gets a commit that edits one leaf project's source, both
clones pull it, and, alternating which goes first, each runs the same one build in CI
(`CI=true`, so B records its green run):

  named       A: `vx run build --affected=<the previous round's commit>`: the base by hand
  last-green  B: `vx run build --affected=last-green`: three records read from the remote
              cache (the branch, main, master) at the start, `git status` and the branch's
              record read and written back at the end

Both execute the same task on the same files; the difference is what finding and recording the
green commit costs. With `--latency-ms`, the server is reached through `vx-latency-proxy`
(a round trip added per request and per new connection). Prints medians with min–max and the
ratio last-green ÷ named. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
import remote  # noqa: E402  (the server, proxy and timing helpers)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--vx", default=str(REPO / "target" / "release" / "vx"))
    ap.add_argument("--latency-ms", default="0,20,100")
    ap.add_argument("--proxy", default=str(REPO / "target" / "release" / "vx-latency-proxy"))
    args = ap.parse_args()
    vx = str(Path(args.vx).resolve())
    work = Path(tempfile.mkdtemp(prefix="vx-bench-green-"))
    try:
        origin = work / "origin"
        subprocess.run([sys.executable, str(BENCH / "generate.py"), "--projects",
                        str(args.projects), "--out", str(origin), "--tools", "vx"], check=True,
                       stdout=subprocess.DEVNULL)
        server, url = remote.start_server(work / "store")
        try:
            leaf = sorted(origin.glob("packages/*/src/a.txt"))[-1]
            base = {k: v for k, v in os.environ.items()
                    if not k.startswith(("VX_", "GITHUB_", "GITLAB_", "CI"))}
            for rtt in [int(n) for n in args.latency_ms.split(",")]:
                proxy, far = remote.start_proxy(Path(args.proxy), url, rtt)
                try:
                    env = {**base, "CI": "true", "VX_REMOTE_CACHE_TOKEN": remote.TOKEN,
                           "VX_REMOTE_CACHE_URL": far, "VX_REMOTE_CACHE_TEAM": remote.TEAM}
                    walls = measure(args, work / f"rtt-{rtt}", origin, leaf, vx, env)
                finally:
                    if proxy:
                        proxy.kill()
                        proxy.wait()
                where = "server on loopback" if rtt == 0 else f"+{rtt} ms per round trip"
                print(f"\n{args.projects} projects, {where}, {args.rounds} rounds:")
                for name, values in walls.items():
                    print(remote.summary(name, values))
                ratio = statistics.median(walls["last-green"]) / statistics.median(walls["named"])
                print(f"last-green ÷ named: {ratio:.2f}×")
        finally:
            server.kill()
            server.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args, work: Path, origin: Path, leaf: Path, vx: str, env: dict) -> dict:
    work.mkdir(parents=True)
    a = remote.clone(origin, work / "a")
    b = remote.clone(origin, work / "b")
    remote.timed([vx, "run", "build", "--all"], a, env)
    remote.timed([vx, "run", "build", "--affected=last-green"], b, env)
    walls: dict[str, list[float]] = {"named": [], "last-green": []}
    for n in range(args.rounds):
        previous = git(origin, "rev-parse", "HEAD")
        leaf.write_text(f"round {work.name} {n}\n")
        git(origin, "-c", "user.email=b@vx", "-c", "user.name=b", "commit", "-qam", f"r{n}")
        for clone in (a, b):
            git(clone, "pull", "-q", "--ff-only")
        runs = [("named", [vx, "run", "build", f"--affected={previous}"], a),
                ("last-green", [vx, "run", "build", "--affected=last-green"], b)]
        if n % 2:
            runs.reverse()
        for name, argv, cwd in runs:
            walls[name].append(remote.timed(argv, cwd, env))
        check = subprocess.run([vx, "run", "build", "--affected=last-green", "--dry"], cwd=b,
                               env=env, capture_output=True, text=True)
        if f"compares with {git(origin, 'rev-parse', '--short=7', 'HEAD')}" not in check.stderr:
            sys.exit(f"round {n}: B did not record its green run:\n{check.stderr}")
    return walls


if __name__ == "__main__":
    main()
