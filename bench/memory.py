#!/usr/bin/env python3
"""vx's peak RSS in every scenario of one generated workspace (PERF-1: ≤ 150 MiB at 10,000 tasks).

    python3 bench/memory.py --projects 3334 [--rounds 2] [--vx target/release/vx]

Generates a workspace with bench/generate.py (three cached tasks per project: 3,334 projects are
10,002 tasks) and runs `vx run check --all` in each scenario, each run under
`/usr/bin/time -f %M`: Linux starts a forked process's peak RSS at its parent's, and this
harness's Python holds more than a small vx run does, so the peak is taken from a small parent.
The figure is the largest of vx's own peak and any process it reaped (tasks of `cp` and `sh`
stay far below it). Scenarios, in this order (the replay is checked to be one):

  cold      no cache, no outputs
  whole     nothing changed, VX_SNAPSHOT=0 (the whole way)
  writes    nothing changed, the snapshot deleted and the racy margin waited out: the run that
            writes a run snapshot
  replay    nothing changed: the snapshot replayed
  restore   every dist/ deleted
  leaf      a source file of a project nothing depends on edited
  core      a source file of the layer-0 project with the most dependants edited

Prints a Markdown table: the median and the range of the peak RSS (MiB) and the wall time.
Python 3 standard library only; the workspace helpers are bench/compare.py's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402  (bench/compare.py)
from compare import BENCH, REPO, RUN_ENV, median, quiet  # noqa: E402

EDITED = "src/a.txt"
SCENARIOS = ("cold", "whole", "writes", "replay", "restore", "leaf", "core")


def main() -> None:
    ap = compare.small_bench_parser(__doc__, projects=3334, rounds=2, concurrency=2,
                                    out="memory")
    args = ap.parse_args()
    if not Path("/usr/bin/time").is_file():
        raise SystemExit("needs /usr/bin/time (apt-get install time)")
    vx, ws, commit = compare.fresh_workspace(args.out, args.projects, args.vx)
    graph = compare.Workspace(ws)
    edited = {"leaf": ws / graph.dir[graph.leaf] / EDITED, "core": ws / graph.dir[graph.core] / EDITED}
    originals = {k: p.read_bytes() for k, p in edited.items()}
    env = {**compare.os.environ, **RUN_ENV}
    env.pop("VX_LOG", None)
    argv = [str(vx), "run", "check", "--all", f"--concurrency={args.concurrency}",
            "--output-logs=none"]
    peaks: dict[str, list[float]] = {s: [] for s in SCENARIOS}
    walls: dict[str, list[float]] = {s: [] for s in SCENARIOS}
    edits = 0

    def wipe_outputs() -> None:
        for p in (ws / "packages").iterdir():
            shutil.rmtree(p / "dist", ignore_errors=True)

    def measured(scenario: str, extra_env: dict | None = None) -> None:
        report = args.out / "time.txt"
        started = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(report), *argv], cwd=ws,
                              env={**env, **(extra_env or {})}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{scenario} failed:\n{done.stderr[-2000:]}")
        peaks[scenario].append(int(report.read_text().split()[-1]) / 1024)
        walls[scenario].append(wall)
        print(f"{scenario:<8} {peaks[scenario][-1]:7.1f} MiB {wall:6.2f} s", file=sys.stderr)

    for _ in range(args.rounds):
        shutil.rmtree(ws / ".vx", ignore_errors=True)
        wipe_outputs()
        measured("cold")
        measured("whole", {"VX_SNAPSHOT": "0"})
        shutil.rmtree(ws / ".vx" / "snapshots", ignore_errors=True)
        time.sleep(2.2)  # the racy margin: the run below may write its snapshot
        measured("writes")
        if not any(not p.name.startswith(".") for p in (ws / ".vx" / "snapshots").glob("*")):
            raise SystemExit("the `writes` run wrote no snapshot")
        measured("replay")
        last = subprocess.run([str(vx), "last", "--format", "json"], cwd=ws, env=env,
                              capture_output=True, text=True, check=True)
        if json.loads(last.stdout)["invocation"].get("replay_of") is None:
            raise SystemExit("the `replay` run went the whole way: it measured no replay")
        wipe_outputs()
        measured("restore")
        for which in ("leaf", "core"):
            edits += 1
            edited[which].write_bytes(originals[which] + f"edit {edits}\n".encode())
            measured(which)
            edited[which].write_bytes(originals[which])
            quiet(argv, ws, {**env, "VX_SNAPSHOT": "0"})  # back to the committed state, untimed

    def cell(values: list[float], unit: str, fmt: str) -> str:
        return f"{format(median(values), fmt)} {unit} ({format(min(values), fmt)}–{format(max(values), fmt)})"

    lines = [
        f"{args.projects:,} projects, {3 * args.projects:,} tasks, concurrency {args.concurrency}, "
        f"{args.rounds} rounds, workspace commit `{commit[:12]}`, leaf `{graph.leaf}`, core `{graph.core}`.",
        "",
        "| scenario | vx peak RSS | wall |",
        "|---|---:|---:|",
    ]
    for scenario in SCENARIOS:
        lines.append(f"| {scenario} | {cell(peaks[scenario], 'MiB', '.0f')} "
                     f"| {cell(walls[scenario], 's', '.2f')} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
