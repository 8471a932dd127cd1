#!/usr/bin/env python3
"""Where a leaf edit's time goes: the phases of `vx run`, from its `--profile` trace.

    python3 bench/phases.py --projects 1000 [--rounds 7] [--vx target/release/vx] [--frozen]

Generates a workspace with bench/generate.py (three cached tasks per project, `check` groups
them), builds it once, then in each round:

  1. gives a source file of a project nothing depends on new content and runs
     `vx run check --all --profile=<out>/trace.json` (its three tasks re-run, the others hit);
  2. gives it new content again and runs the same command without `--profile` (the wall time a
     user sees; writing the trace costs time at the end of the first);
  3. runs `git status --porcelain -uall`: the `git status` part of issue 26's leaf floor
     (docs/benchmarks.md § Floors adds the ideal schedule of the re-run tasks; the ratios here
     divide by `git status` alone).

From each trace (`ts`/`dur` in microseconds from the start of the run, before planning; see
docs/cli.md § --profile) it takes vx's own events on its `vx` thread and the tasks' events:

  load        from the start to `open the cache`'s start: discovery and reading every
              configuration file (with `--frozen`: vx.lock and the blob ids of those files)
  graph+open  the rest of `plan` (edges, selection, graph), overlapped with `open the cache`
              (the index, the lock, listing the file tree)
  setup       the end of `plan` to the start of `ahead`: the run's cache, keys and reporter
  ahead       `read ahead, keys and hits of stable tasks`: every task not downstream of a change
              keyed, looked up, its outputs compared (2,997 of 3,000 here)
  tasks       the end of `ahead` to the end of the trace's last event (the edited project's
              tasks)
  end         the process's wall time less the trace's last event: history rows, entries
              marked used, the footer, the trace itself, plus the process's start and its
              arguments before the trace's zero

and prints a Markdown table of medians with the range (min–max), and each phase divided by the
`git status` median of the same rounds. Every run has `VX_SNAPSHOT=0`: a leaf edit is never
replayed, and no snapshot is written or checked. `--frozen` writes `vx.lock` after the first build and
runs every timed command with `--frozen`. Python 3 standard library only; the helpers are
bench/compare.py's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402  (bench/compare.py)
from compare import RUN_ENV, fmt_time, median, parse_counters, run_measured  # noqa: E402

PHASES = ("load", "graph+open", "setup", "ahead", "tasks", "end")


def phases(trace: Path, wall: float) -> dict[str, float]:
    """The five phases, in seconds, of one profiled run whose process took `wall` seconds."""
    data = json.loads(trace.read_text(encoding="utf-8"))
    events = data["traceEvents"] if isinstance(data, dict) else data
    spans = [e for e in events if e.get("ph") == "X"]
    own = {e["name"]: e for e in spans if e.get("cat") == "vx"}
    plan, opening = own["plan"], own["open the cache"]
    ahead = own["read ahead, keys and hits of stable tasks"]
    last = max(e["ts"] + e["dur"] for e in spans) / 1e6
    plan_end = (plan["ts"] + plan["dur"]) / 1e6
    ahead_end = (ahead["ts"] + ahead["dur"]) / 1e6
    if opening["ts"] / 1e6 > plan_end:
        raise SystemExit(f"{trace}: the cache was opened after planning (no index yet, or its "
                         "lock was busy): the phases would not add up")
    return {
        "load": opening["ts"] / 1e6,
        "graph+open": plan_end - opening["ts"] / 1e6,
        "setup": ahead["ts"] / 1e6 - plan_end,
        "ahead": ahead["dur"] / 1e6,
        "tasks": last - ahead_end,
        "end": wall - last,
    }


def main() -> None:
    ap = compare.small_bench_parser(__doc__, projects=1000, rounds=7, concurrency=2,
                                    out="phases")
    ap.add_argument("--frozen", action="store_true", help="write vx.lock and run with --frozen")
    args = ap.parse_args()
    env = {**compare.os.environ, **RUN_ENV, "VX_SNAPSHOT": "0"}
    vx, ws, commit, graph, leaf_file, original, base = compare.built_leaf_workspace(
        args, env, lock=args.frozen)
    if args.frozen:
        base.append("--frozen")
    trace = args.out / "trace.json"

    rows: list[dict[str, float]] = []
    edits = 0

    def run(argv: list[str], name: str) -> dict:
        out, err = args.out / f"{name}.out", args.out / f"{name}.err"
        result = run_measured(argv, ws, env, out, err, 600)
        if result["exit"] != 0:
            raise SystemExit(f"{name} failed:\n{err.read_text()[-2000:]}")
        result["counters"] = parse_counters(err.read_text())
        return result

    def edit() -> None:
        nonlocal edits
        edits += 1
        leaf_file.write_bytes(original + f"edit {edits}\n".encode())

    try:
        for round_ in range(args.rounds + 1):
            edit()
            profiled = run(base + [f"--profile={trace}"], "profiled")
            edit()
            plain = run(base, "plain")
            floor = run(["git", "status", "--porcelain", "-uall"], "floor")
            counters = plain["counters"]
            row = phases(trace, profiled["wall"])
            row.update({
                "profiled": profiled["wall"],
                "wall": plain["wall"],
                "own CPU": (counters.get("cpu_user_ms", 0) + counters.get("cpu_sys_ms", 0)) / 1000,
                "git status": floor["wall"],
            })
            print(f"round {round_}: " + ", ".join(f"{k} {fmt_time(v)}" for k, v in row.items()),
                  file=sys.stderr)
            if round_ > 0:  # the first round warms the page cache and the index: untimed
                rows.append(row)
    finally:
        leaf_file.write_bytes(original)

    floor = median([r["git status"] for r in rows])
    lines = [
        f"{args.projects:,} projects, {3 * args.projects:,} tasks, {args.rounds} rounds"
        f"{', --frozen' if args.frozen else ''}, workspace commit `{commit[:12]}`, leaf "
        f"`{graph.leaf}`, concurrency {args.concurrency}.",
        "",
        "| | median (min–max) | ÷ git status |",
        "|---|---:|---:|",
    ]
    for name in PHASES + ("profiled", "wall", "own CPU", "git status"):
        values = [r[name] for r in rows]
        mid = median(values)
        lines.append(f"| {name} | {fmt_time(mid)} ({fmt_time(min(values))}–"
                     f"{fmt_time(max(values))}) | {mid / floor:.2f}× |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
