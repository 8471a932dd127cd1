#!/usr/bin/env python3
"""Sources written again with the same bytes: still a replay (docs/cache.md § Replayed runs).

    python3 bench/touched.py --projects 1000 [--rounds 7] [--vx target/release/vx]

Generates a workspace with bench/generate.py (three cached tasks per project, `check` groups
them), builds it once and runs it until its snapshot holds, then in each round times
`vx run check --all` in four states, in a rotating order:

  nothing    nothing changed: the snapshot is replayed
  one        the leaf project's `src/a.txt` written again in place with the same bytes, 0.3 s
             before the run: its times moved, its content did not (hashed again, replayed, and
             its new stat data written down)
  every      every project's `src/a.txt` written again in place with the same bytes (what a
             formatter or a code generator that rewrites files in place does)
  whole      nothing changed, `VX_SNAPSHOT=0`: the whole way (configuration, listing, keys,
             lookups), what `one` and `every` cost before vx judged such files by content

and `git --no-optional-locks status --porcelain -uall` (which hashes a touched file again too,
without writing the index) as the floor, right after `every`. Checks that each replayed state
was replayed (`vx last`). Prints a Markdown table of medians with the range (min–max), and each
median divided by the floor's. Python 3 standard library only; the helpers are bench/compare.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402  (bench/compare.py)
from compare import RUN_ENV, fmt_time, median, run_measured  # noqa: E402

STATES = ("nothing", "one", "every", "whole")


def main() -> None:
    ap = compare.small_bench_parser(__doc__, projects=1000, rounds=7, concurrency=2,
                                    out="touched")
    args = ap.parse_args()
    env = {**os.environ, **RUN_ENV}
    vx, ws, commit, graph, leaf_file, original, base = compare.built_leaf_workspace(args, env)
    sources = sorted(ws.glob("packages/*/src/a.txt"))

    def rewrite(paths: list[Path]) -> None:
        for path in paths:
            data = path.read_bytes()
            with open(path, "r+b") as f:  # in place: the same inode, the directory unmoved
                f.write(data)
        time.sleep(0.3)

    def replayed() -> bool:
        out = subprocess.run([str(vx), "last", "--format", "json"], cwd=ws, env=env,
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)["invocation"].get("replay_of") is not None

    def run(argv: list[str], name: str, extra: dict | None = None) -> float:
        out, err = args.out / f"{name}.out", args.out / f"{name}.err"
        result = run_measured(argv, ws, {**env, **(extra or {})}, out, err, 600)
        if result["exit"] != 0:
            raise SystemExit(f"{name} failed:\n{err.read_text()[-2000:]}")
        return result["wall"]

    # Until the snapshot holds: the run that writes it, then a replay.
    for _ in range(3):
        run(base, "warm")
        time.sleep(0.3)
    if not replayed():
        raise SystemExit("the snapshot does not hold after three runs")

    times: dict[str, list[float]] = {name: [] for name in STATES + ("git status",)}
    for round_ in range(args.rounds + 1):
        order = STATES[round_ % 4:] + STATES[:round_ % 4]
        row = {}
        for state in order:
            if state == "one":
                rewrite([leaf_file])
            elif state == "every":
                rewrite(sources)
            extra = {"VX_SNAPSHOT": "0"} if state == "whole" else {}
            row[state] = run(base, state, extra)
            if state != "whole" and not replayed():
                raise SystemExit(f"{state}: not replayed")
            if state == "every":
                row["git status"] = run(["git", "--no-optional-locks", "status", "--porcelain",
                                         "-uall"], "floor")
        print(f"round {round_}: " + ", ".join(f"{k} {fmt_time(v)}" for k, v in row.items()),
              file=sys.stderr)
        if round_ > 0:  # the first round warms the page cache: untimed
            for name, value in row.items():
                times[name].append(value)

    floor = median(times["git status"])
    print(f"{args.projects:,} projects, {3 * args.projects:,} tasks, {len(sources):,} sources "
          f"in `every`, {args.rounds} rounds, workspace commit `{commit[:12]}`.\n")
    print("| state | median (min–max) | ÷ git status |")
    print("|---|---:|---:|")
    for name in STATES + ("git status",):
        values = times[name]
        mid = median(values)
        print(f"| {name} | {fmt_time(mid)} ({fmt_time(min(values))}–{fmt_time(max(values))}) "
              f"| {mid / floor:.2f}× |")


if __name__ == "__main__":
    main()
