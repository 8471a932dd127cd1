#!/usr/bin/env python3
"""How fast a watch answers an edit: `vx watch build` against `turbo watch build` on the same
generated workspace (bench/generate.py, vx and turbo flavours, one commit).

    python3 bench/watch.py [--projects 30] [--edits 11] [--settle 3] [--vx target/release/vx]

Each tool watches its own copy of the workspace. After its first run has settled, the script
edits `src/a.txt` of a project in the first layer (everything else depends on that layer) with
new content, and times how long until that project's `dist/a.txt` holds the edit: the file
event, the debounce, planning, the key, and the task itself. It waits `--settle` seconds
between edits so each cascade is over before the next edit. The tools alternate edit by edit;
the result is the median of `--edits` edits per tool. Needs bench/install.sh (turbo) and a
release build of vx. Standard library only.

With `--server`, the same for a dev server: project p0001 gets a persistent `dev` task (for
turbo `persistent` and `interruptible`, so that `turbo watch` restarts it) that writes its
`src/a.txt` to a file outside the workspace when it starts, then sleeps. The tools run
`vx watch dev --all` and `turbo watch dev`; the time is from the edit of `src/a.txt` until the
restarted server has written the edit: the event, the debounce, the old server stopped, the
new one started.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV = {
    **os.environ,
    "TURBO_TELEMETRY_DISABLED": "1",
    "DO_NOT_TRACK": "1",
    "TURBO_NO_UPDATE_NOTIFIER": "1",
    # turbo runs the package scripts through npm; the shim runs them with sh directly, as vx.
    "PATH": f"{HERE / 'npm-shim'}:{os.environ.get('PATH', '')}",
}


def turbo_binary():
    found = sorted((HERE / "node_modules" / "@turbo").glob("*/bin/turbo"))
    if not found:
        sys.exit("turbo is not installed: run bench/install.sh")
    return str(found[0])


def wait_for(path, text, timeout=30.0):
    """Seconds until `path` contains `text`; None on timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if text in path.read_text():
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.002)
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--projects", type=int, default=30)
    parser.add_argument("--edits", type=int, default=11)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--vx", default=str(HERE.parent / "target" / "release" / "vx"))
    parser.add_argument("--server", action="store_true",
                        help="time the restart of a dev server instead of a build")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vx-bench-watch-"))
    watchers = []
    try:
        base = work / "ws"
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--projects",
                        str(args.projects), "--out", str(base), "--tools", "vx,turbo"],
                       check=True, stdout=subprocess.DEVNULL)
        task = "dev" if args.server else "build"
        commands = {
            "vx": [os.path.abspath(args.vx), "watch", task, "--all"],
            "turbo": [turbo_binary(), "watch", task],
        }
        copies = {}
        started = {}
        for tool, command in commands.items():
            copy = work / tool
            subprocess.run(["git", "clone", "-q", str(base), str(copy)], check=True)
            copies[tool] = copy
            if args.server:
                started[tool] = work / f"{tool}-dev-started.txt"
                add_dev_server(copy, started[tool])
            log = open(work / f"{tool}.log", "w")
            watchers.append(subprocess.Popen(command, cwd=copy, env=ENV, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True))
        edited = "packages/p0001"
        # The first run: every project built (or the server started), in both copies.
        for tool, copy in copies.items():
            last = copy / "packages" / f"p{args.projects:04d}" / "dist" / "index.txt"
            if args.server:
                last = started[tool]
            if wait_for(last, "", timeout=120) is None:
                sys.exit(f"{tool}: the first run did not finish (see {work / (tool + '.log')})")
        time.sleep(args.settle)
        times = {tool: [] for tool in copies}
        for n in range(args.edits):
            for tool, copy in copies.items():
                marker = f"edit {n} {time.time_ns()}"
                (copy / edited / "src" / "a.txt").write_text(marker + "\n")
                answer = started[tool] if args.server else copy / edited / "dist" / "a.txt"
                took = wait_for(answer, marker)
                if took is None:
                    sys.exit(f"{tool}: edit {n} never reached dist (see {work / (tool + '.log')})")
                times[tool].append(took * 1000)
                time.sleep(args.settle)
        what = "dev server restart" if args.server else "rebuild"
        print(f"{what}: {args.projects} projects, {args.edits} edits each, settle {args.settle}s")
        for tool, ms in times.items():
            print(f"{tool:6} median {statistics.median(ms):7.1f} ms   "
                  f"({', '.join(f'{m:.0f}' for m in ms)})")
        ratio = statistics.median(times["vx"]) / statistics.median(times["turbo"])
        print(f"vx/turbo {ratio:.2f}x")
    finally:
        for watcher in watchers:
            try:
                os.killpg(watcher.pid, signal.SIGINT)
                watcher.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(watcher.pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)


def add_dev_server(copy, started):
    """Project p0001 gets a persistent `dev` task in both flavours, committed."""
    command = f"cat src/a.txt > {started}; exec sleep 100000"
    project = copy / "packages" / "p0001"
    with open(project / "vx.toml", "a") as toml:
        toml.write(f"\n[tasks.dev]\ncommand = \"{command}\"\npersistent = true\n")
    package = json.loads((project / "package.json").read_text())
    package["scripts"]["dev"] = command
    (project / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    turbo = json.loads((copy / "turbo.json").read_text())
    turbo["tasks"]["dev"] = {"persistent": True, "interruptible": True, "cache": False,
                             "inputs": ["src/**"]}
    (copy / "turbo.json").write_text(json.dumps(turbo, indent=2) + "\n")
    subprocess.run(["git", "-C", str(copy), "-c", "user.name=bench", "-c",
                    "user.email=bench@example.com", "commit", "-qam", "dev server"], check=True)


if __name__ == "__main__":
    main()
