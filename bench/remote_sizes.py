#!/usr/bin/env python3
"""How fast the remote cache moves entries of 1 KB, 1 MB and 100 MB: entries per second and
MB per second, HTTP (turborepo-remote-cache) and REAPI (buildbox-casd), near and far.

    cargo build --release -p vx-run -p vx-test-support --bin vx --bin vx-latency-proxy
    python3 bench/remote_sizes.py --rounds 3 --latency-ms 0,20

For each size a workspace of N projects (200 of 1 KB, 40 of 1 MB, 2 of 100 MB) whose one cached
task writes `dist/blob`: that many random (incompressible) bytes. The servers are filled from one
clone (`CI=true`, on loopback). Then per latency and round, from fresh clones:

  restore  everything comes from the server (no local cache, no outputs): entries / wall and
           bytes / wall
  upload   a cold run with remote reads off and uploads on, which waits for its uploads at the
           end; beside it the same run with the remote off, so the uploads' share is the
           difference: entries and bytes over the whole upload run's wall

The servers are reached through `vx-latency-proxy` for a latency above 0 (see bench/remote.py).
Each clone is deleted after its run (a few large files, not the thousands that made deleting
slow in bench/remote.py). Prints medians with min and max. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from remote import (REPO, TEAM, TOKEN, clone, log, start_casd, start_proxy,  # noqa: E402
                    start_server)

SIZES = [("1 KB", 1 << 10, 200), ("1 MB", 1 << 20, 40), ("100 MB", 100 << 20, 2)]


def workspace(at: Path, size: int, count: int, url: str) -> Path:
    """A committed workspace of `count` projects whose `build` writes `size` random bytes."""
    at.mkdir(parents=True)
    (at / "vx.toml").write_text(
        f'[workspace]\nmembers = ["packages/*"]\n\n[workspace.remote-cache]\nurl = "{url}"\n'
        f'team = "{TEAM}"\n')
    (at / ".gitignore").write_text(".vx/\ndist/\nsummary.json\n")
    for n in range(count):
        project = at / "packages" / f"p{n:03}"
        project.mkdir(parents=True)
        (project / "package.json").write_text(f'{{"name": "p{n:03}", "version": "1.0.0"}}\n')
        (project / "vx.toml").write_text(
            f'[tasks.build]\ncommand = "mkdir -p dist && head -c {size} /dev/urandom > dist/blob"\n'
            'cache = { inputs = ["vx.toml"], outputs = ["dist/**"] }\n')
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm",
                  "sizes"]):
        subprocess.run(["git", *args], cwd=at, check=True)
    return at


def timed(argv: list[str], ws: Path, env: dict, count: int, kind: str) -> float:
    """Runs vx once in `ws` and checks it did what `kind` measures: every entry restored from
    the server, every result uploaded, or nothing remote. Its wall time."""
    summary = ws / "summary.json"
    start = time.perf_counter()
    done = subprocess.run([*argv, f"--summarize={summary}"], cwd=ws, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"vx failed in {ws}: {done.stderr[-2000:]}")
    words = [t.get("cache") for t in json.loads(summary.read_text())["tasks"]]
    if kind == "restore" and words != ["restored-remote"] * count:
        sys.exit(f"not everything came from the server: {words}\n{done.stderr[-2000:]}")
    if kind == "upload" and f"uploaded {count} result" not in done.stderr:
        sys.exit(f"not every result went up:\n{done.stderr[-2000:]}")
    return wall


def spread(walls: list[float]) -> str:
    return f"{statistics.median(walls):.3f} s ({min(walls):.3f}–{max(walls):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency-ms", default="0,20")
    ap.add_argument("--vx", default=str(REPO / "target" / "release" / "vx"))
    ap.add_argument("--proxy", default=str(REPO / "target" / "release" / "vx-latency-proxy"))
    args = ap.parse_args()
    vx = str(Path(args.vx).resolve())
    latencies = [int(n) for n in args.latency_ms.split(",")]
    work = Path(tempfile.mkdtemp(prefix="vx-bench-sizes-"))
    server, url = start_server(work / "store")
    casd, casd_url = start_casd(work / "casd")
    run = [vx, "run", "build", "--all"]
    env = {"VX_REMOTE_CACHE_TOKEN": TOKEN, "PATH": "/usr/local/bin:/usr/bin:/bin",
           "HOME": str(work)}
    try:
        print(f"{args.rounds} rounds; medians (min–max)")
        for name, size, count in SIZES:
            origin = workspace(work / f"origin-{size}", size, count, url)
            log(f"{name}: filling the servers…")
            for protocol_url in (url, casd_url):
                fill = clone(origin, work / "fill")
                timed(run, fill, {**env, "CI": "true", "VX_REMOTE_CACHE_URL": protocol_url},
                      count, "upload")
                shutil.rmtree(fill)
            for rtt in latencies:
                for protocol, direct in (("HTTP", url), ("REAPI", casd_url)):
                    proxy, far = start_proxy(Path(args.proxy), direct, rtt)
                    walls: dict[str, list[float]] = {"restore": [], "upload": [], "off": []}
                    try:
                        for r in range(args.rounds):
                            for kind, extra, ci in (("restore", [], ""),
                                                    ("upload", ["--cache=local:rw,remote:w"],
                                                     "true"),
                                                    ("off", ["--cache=remote:"], "")):
                                ws = clone(origin, work / f"{kind}-{r}")
                                walls[kind].append(timed(run + extra, ws, {
                                    **env, "CI": ci, "VX_REMOTE_CACHE_URL": far}, count, kind))
                                shutil.rmtree(ws)
                    finally:
                        if proxy:
                            proxy.kill()
                            proxy.wait()
                    mb = count * size / 1e6
                    restore = statistics.median(walls["restore"])
                    upload = statistics.median(walls["upload"])
                    where = "loopback" if rtt == 0 else f"+{rtt} ms"
                    print(f"{name:>6} × {count:<3} {protocol:<5} {where:<8} "
                          f"restore {spread(walls['restore'])}: {count / restore:7.1f} entries/s "
                          f"{mb / restore:8.1f} MB/s | upload run {spread(walls['upload'])} "
                          f"(remote off {spread(walls['off'])}): {count / upload:7.1f} entries/s "
                          f"{mb / upload:8.1f} MB/s", flush=True)
            shutil.rmtree(origin)
    finally:
        for process in (server, casd):
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
