#!/usr/bin/env python3
"""A/B of two vx binaries on one generated workspace: did a change make vx slower?

    python3 bench/generate.py --projects 1000 --out bench/out/ab --tools vx,turbo
    python3 bench/ab.py --old OLD_VX --new NEW_VX --ws bench/out/ab --rounds 7

For each round, in alternating order (old first in even rounds, new first in odd ones), each
binary runs `vx run build --all` four ways on the same tree: cold (no `.vx`, no `dist/`),
warm (nothing changed, after one warm-up run), restore (every `dist/` deleted, the cache
kept) and leaf (the last project's `src/a.txt`, which nothing depends on, given content no
cache has seen: its build re-runs). The turbo flavour adds the root `package-lock.json`, which
keys fold per project (KEY-3), as in a user's workspace. `--scenarios` picks some of them
(without `cold`, each binary builds the tree, untimed, in the first round, and later rounds start
from the tree and cache the other binary's last run left, so both binaries must key alike);
the runs inherit the
environment, so `VX_SNAPSHOT=0 python3 bench/ab.py …` times the whole way rather than a replay
when the warm-up wrote a snapshot. Prints the median, minimum and maximum wall time and CPU time (vx and its tasks) of
each, and the new/old ratio of the medians. Wall times on a shared 2-core machine spread
widely; for vx's own work, count instructions with `valgrind --tool=callgrind` instead (see
docs/benchmarks.md).
"""
import argparse
import glob
import os
import resource
import shutil
import statistics
import subprocess
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--ws", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scenarios", default="cold,warm,restore,leaf")
    args = parser.parse_args()
    bins = {"old": args.old, "new": args.new}
    ws = args.ws

    def remove_outputs():
        for d in glob.glob(os.path.join(ws, "packages/*/dist")):
            shutil.rmtree(d)

    def run(binary):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [binary, "run", "build", "--all"],
            cwd=ws,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(done.stderr.decode(errors="replace")[-2000:])
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        return wall, cpu

    known = ("cold", "warm", "restore", "leaf")
    unknown = set(args.scenarios.split(",")) - set(known)
    if unknown:
        raise SystemExit(f"--scenarios: unknown {', '.join(sorted(unknown))} (known: {', '.join(known)})")
    scenarios = tuple(x for x in known if x in args.scenarios.split(","))
    leaf = original = None
    if "leaf" in scenarios:
        leaf = sorted(glob.glob(os.path.join(ws, "packages/*/src/a.txt")))[-1]
        original = open(leaf, "rb").read()
    edits = 0

    def edit_leaf():
        nonlocal edits
        edits += 1
        with open(leaf, "wb") as f:
            f.write(original + f"edit {edits}\n".encode())

    results = {(k, s): [] for k in bins for s in scenarios}
    try:
        for round_ in range(args.rounds):
            order = list(bins.items())
            if round_ % 2:
                order.reverse()
            for name, binary in order:
                if "cold" in scenarios or round_ == 0:
                    shutil.rmtree(os.path.join(ws, ".vx"), ignore_errors=True)
                    remove_outputs()
                    built = run(binary)
                    if "cold" in scenarios:
                        results[(name, "cold")].append(built)
                if "warm" in scenarios:
                    run(binary)
                    results[(name, "warm")].append(run(binary))
                if "restore" in scenarios:
                    remove_outputs()
                    results[(name, "restore")].append(run(binary))
                if "leaf" in scenarios:
                    edit_leaf()
                    results[(name, "leaf")].append(run(binary))
    finally:
        if edits:
            with open(leaf, "wb") as f:
                f.write(original)

    for scenario in scenarios:
        for name in bins:
            walls = [w for w, _ in results[(name, scenario)]]
            cpus = [c for _, c in results[(name, scenario)]]
            print(
                f"{scenario:8} {name}: wall median {statistics.median(walls) * 1000:8.1f} ms"
                f" (min {min(walls) * 1000:.1f}, max {max(walls) * 1000:.1f});"
                f" cpu median {statistics.median(cpus) * 1000:8.1f} ms"
                f" (min {min(cpus) * 1000:.1f}, max {max(cpus) * 1000:.1f})"
            )
        old = statistics.median(w for w, _ in results[("old", scenario)])
        new = statistics.median(w for w, _ in results[("new", scenario)])
        print(f"{scenario:8} new/old wall: {new / old:.2f}")


if __name__ == "__main__":
    main()
