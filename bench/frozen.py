#!/usr/bin/env python3
"""What `vx run --frozen` saves: plain and frozen runs of one generated workspace, alternated.

    python3 bench/frozen.py --projects 1000 [--rounds 7] [--vx target/release/vx]

Generates a workspace with bench/generate.py (three cached tasks per project, `check` groups
them), builds it once and writes `vx.lock`, then times `vx run check --all` in each round, in
alternating order (plain first in even rounds, frozen first in odd ones), two ways:

  whole   nothing changed, VX_SNAPSHOT=0: the whole way (configuration, listing, keys,
          lookups), as the first run after any change
  leaf    a source file of a project nothing depends on gets new content first (its three tasks
          re-run)

and `git status --porcelain -uall` as the floor. Prints a Markdown table of medians with the
range (min–max) of wall time and of vx's own CPU (its counters line), and the frozen/plain ratio.
Python 3 standard library only; the helpers are bench/compare.py's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402  (bench/compare.py)
from compare import RUN_ENV, fmt_time, median, parse_counters, run_measured  # noqa: E402



def main() -> None:
    ap = compare.small_bench_parser(__doc__, projects=1000, rounds=7, concurrency=4,
                                    out="frozen")
    args = ap.parse_args()
    env = {**compare.os.environ, **RUN_ENV}
    vx, ws, commit, graph, leaf_file, original, base = compare.built_leaf_workspace(
        args, env, lock=True)

    records: list[dict] = []
    edits = 0

    def timed(how: str, scenario: str, keep: bool = True) -> None:
        nonlocal edits
        if scenario == "leaf":
            edits += 1
            leaf_file.write_bytes(original + f"edit {edits}\n".encode())
        if how == "floor":
            argv = ["git", "status", "--porcelain", "-uall"]
        else:
            argv = base + (["--frozen"] if how == "frozen" else [])
        out, err = args.out / f"{how}.out", args.out / f"{how}.err"
        result = run_measured(argv, ws, {**env, "VX_SNAPSHOT": "0"}, out, err, 600)
        if result["exit"] != 0:
            raise SystemExit(f"{how} {scenario} failed:\n{err.read_text()[-2000:]}")
        counters = parse_counters(err.read_text()) if how != "floor" else {}
        own = (counters.get("cpu_user_ms", 0) + counters.get("cpu_sys_ms", 0)) / 1000
        if keep:
            records.append({"how": how, "scenario": scenario, "wall": result["wall"],
                            "own_cpu": own if counters else None})
        print(f"{scenario:<6} {how:<7} {fmt_time(result['wall']):>9}", file=sys.stderr)

    for scenario in ("whole", "leaf"):
        timed("plain", scenario, keep=False)  # warm-up, untimed
        timed("frozen", scenario, keep=False)
        for round_ in range(args.rounds):
            order = ["plain", "frozen", "floor"]
            if round_ % 2:
                order = ["frozen", "plain", "floor"]
            for how in order:
                timed(how, scenario)
        leaf_file.write_bytes(original)

    def stats(how: str, scenario: str, key: str) -> tuple:
        values = [r[key] for r in records if r["how"] == how and r["scenario"] == scenario]
        values = [v for v in values if v is not None]
        return (median(values), min(values), max(values)) if values else (None, None, None)

    def shown(triple: tuple) -> str:
        mid, low, high = triple
        return "—" if mid is None else f"{fmt_time(mid)} ({fmt_time(low)}–{fmt_time(high)})"

    lines = [
        f"{args.projects:,} projects, {3 * args.projects:,} tasks, {args.rounds} rounds, "
        f"workspace commit `{commit[:12]}`, leaf `{graph.leaf}`.",
        "",
        "| scenario | plain wall | frozen wall | frozen/plain | plain own CPU | frozen own CPU "
        "| git status | frozen/floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scenario in ("whole", "leaf"):
        plain, frozen = stats("plain", scenario, "wall"), stats("frozen", scenario, "wall")
        floor = stats("floor", scenario, "wall")
        lines.append(
            f"| {scenario} | {shown(plain)} | {shown(frozen)} | {frozen[0] / plain[0]:.2f}× "
            f"| {shown(stats('plain', scenario, 'own_cpu'))} "
            f"| {shown(stats('frozen', scenario, 'own_cpu'))} | {shown(floor)} "
            f"| {frozen[0] / floor[0]:.1f}× |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
