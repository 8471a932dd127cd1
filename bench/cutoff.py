#!/usr/bin/env python3
"""Early cutoff (KEY-9) side by side: a comment edit in a core library, vx against Turborepo's
`dependencyOutputs` and moon's `cacheStrategy: outputs`.

    bench/install.sh
    cargo build --release --locked -p vx-run --bin vx
    python3 bench/cutoff.py [--projects 1000] [--runs 5] [--old-vx PATH] [--concurrency 2]

One workspace from `bench/generate.py --cutoff` (builds drop `#` comment lines, so a comment edit
writes the same `dist/`; turbo's build folds `dependencyOutputs`, moon's `^:build` edges
`cacheStrategy: outputs`), cloned once per runner. Runners: `vx`; `vx-keys`, the same binary with
`cache.upstream-keys = ["*", "^*"]` on every build (today's rule: upstream keys folded);
`vx-old` with `--old-vx` (a vx built before early cutoff); `turbo`; `moon`. After one cold build
each, three scenarios of `check` over every project, alternating runners within each round:

  comment   a `# comment N` line added to the core project's `src/a.txt` (the layer-0 project
            with the most transitive dependants): its build re-runs to the same outputs
  leaf      new content in the leaf project's `src/a.txt` (nothing depends on it)
  core      new content in the core project's `src/a.txt`: its whole closure re-runs

Each run's wall time, and the tasks it executed (counted minus served from the cache, from each
tool's summary). Prints a Markdown table of medians (min–max) and writes it with the raw runs to
bench/out/cutoff-<stamp>.{md,json}. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import (  # noqa: E402
    BENCH, EDITED_FILE, NODE_MODULES, REPO, RUN_ENV, BenchError, Tools, Workspace, cached_count,
    fmt_time, log, median, quiet, run_measured)

SCENARIOS = ("comment", "leaf", "core")
KEYS_RULE = 'upstream-keys = ["*", "^*"]'


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projects", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5, help="timed rounds per scenario (default 5)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--vx", type=Path, default=REPO / "target" / "release" / "vx")
    ap.add_argument("--old-vx", type=Path, help="a vx without early cutoff, for the A/B")
    ap.add_argument("--runners", default="vx,vx-keys,vx-old,turbo,moon")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", type=Path, default=BENCH / "out")
    args = ap.parse_args()

    runners = [r for r in args.runners.split(",") if r and (r != "vx-old" or args.old_vx)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VX_", "TURBO_", "NX_"))}
    env.update(RUN_ENV)
    root = args.out / f"cutoff-{args.projects}"
    if root.exists():
        shutil.rmtree(root)
    logs = root / "logs"
    logs.mkdir(parents=True)
    bins = root / "bin"
    bins.mkdir()
    # Copies of the binaries: the source tree may be rebuilt while this runs.
    vx = bins / "vx"
    shutil.copy2(args.vx, vx)
    old = None
    if args.old_vx:
        old = bins / "vx-old"
        shutil.copy2(args.old_vx, old)
    tools = Tools(vx, shutil.which("node") or "node")

    generated = root / "generated"
    log(f"generating {args.projects} projects (--cutoff)")
    quiet([sys.executable, str(BENCH / "generate.py"), "--projects", str(args.projects),
           "--out", str(generated), "--seed", str(args.seed), "--tools", "vx,turbo,moon",
           "--cutoff"], REPO)
    copies = {r: root / r for r in runners}
    for name, copy in copies.items():
        quiet(["git", "clone", "--quiet", str(generated), str(copy)], root, env)
        if name == "turbo":
            (copy / "node_modules").mkdir()
            (copy / "node_modules" / "turbo").symlink_to(NODE_MODULES / "turbo")
        if name == "vx-keys":
            for config in copy.glob("packages/*/vx.toml"):
                text = config.read_text()
                text = text.replace('outputs = ["dist/**"] }', f'outputs = ["dist/**"], {KEYS_RULE} }}', 1)
                config.write_text(text)
            quiet(["git", "-c", "user.name=vx bench", "-c", "user.email=bench@vx.invalid",
                   "commit", "-qam", "today's rule: upstream keys"], copy, env)
    shutil.rmtree(generated)
    time.sleep(1.1)
    for copy in copies.values():
        quiet(["git", "update-index", "-q", "--refresh"], copy, env)
    ws = Workspace(copies[runners[0]])
    core, leaf = ws.core, ws.leaf
    originals = {p: (copies[runners[0]] / ws.dir[p] / EDITED_FILE).read_bytes() for p in (core, leaf)}
    log(f"core {core} ({len(ws.closure(core))} transitive dependants), leaf {leaf}")

    def argv(runner: str, copy: Path) -> list[str]:
        if runner.startswith("vx"):
            binary = old if runner == "vx-old" else vx
            return [str(binary), "-C", str(copy), "run", "check", "--all", "--concurrency",
                    str(args.concurrency), "--output-logs=none"]
        return tools.argv(runner, copy, args.concurrency)

    def run(runner: str, label: str) -> dict:
        out, err = logs / f"{runner}.out", logs / f"{runner}.err"
        tool_env = env
        if runner == "turbo":
            tool_env = {**env, "PATH": f"{BENCH / 'npm-shim'}:{env.get('PATH', '')}"}
        result = run_measured(argv(runner, copies[runner]), copies[runner], tool_env, out, err,
                              args.timeout)
        text = out.read_text(errors="replace") + "\n" + err.read_text(errors="replace")
        if result["exit"] != 0:
            raise BenchError(f"{runner} failed ({label}, exit {result['exit']}):\n{text[-2000:]}")
        counts = cached_count("vx" if runner.startswith("vx") else runner, text)
        if counts is None:
            raise BenchError(f"{runner} ({label}): no cache summary in its output; see {logs}")
        cached, counted = counts
        # moon also counts its no-op `check` of each project where one of the three re-ran.
        result["executed"] = counted - cached
        result["counted"] = counted
        result["cached"] = cached
        return result

    counter = 0

    def prepare(runner: str, scenario: str) -> None:
        nonlocal counter
        counter += 1
        project = leaf if scenario == "leaf" else core
        path = copies[runner] / ws.dir[project] / EDITED_FILE
        if scenario == "comment":
            path.write_bytes(originals[core] + f"# comment {counter}\n".encode())
        else:
            path.write_bytes(originals[project] + f"edit {counter}\n".encode())

    records = []
    log("cold builds (untimed)")
    for runner in runners:
        run(runner, "cold")
    for scenario in SCENARIOS:
        for rep in range(args.runs + 1):
            order = runners if rep % 2 == 0 else list(reversed(runners))
            for runner in order:
                prepare(runner, scenario)
                result = run(runner, f"{scenario} {rep}")
                if rep == 0:
                    continue  # warm-up after the previous scenario's last edit
                result.update(runner=runner, scenario=scenario, rep=rep)
                records.append(result)
                log(f"{scenario} {rep}/{args.runs} {runner}: {fmt_time(result['wall'])}, "
                    f"{result['executed']} executed")
        # Back to the original file for the next scenario (and its warm-up round).
        for runner in runners:
            (copies[runner] / ws.dir[core] / EDITED_FILE).write_bytes(originals[core])
            (copies[runner] / ws.dir[leaf] / EDITED_FILE).write_bytes(originals[leaf])

    table = markdown(records, runners, args, ws)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    (args.out / f"cutoff-{stamp}.md").write_text(table)
    (args.out / f"cutoff-{stamp}.json").write_text(json.dumps(records, indent=1))
    print(table)
    return 0


def markdown(records: list[dict], runners: list[str], args, ws: Workspace) -> str:
    def cell(runner: str, scenario: str) -> str:
        walls = [r["wall"] for r in records if r["runner"] == runner and r["scenario"] == scenario]
        executed = sorted({r["executed"] for r in records
                           if r["runner"] == runner and r["scenario"] == scenario})
        if not walls:
            return "–"
        tasks = "/".join(str(e) for e in executed)
        return f"{fmt_time(median(walls))} ({fmt_time(min(walls))}–{fmt_time(max(walls))}), {tasks} run"

    lines = [
        f"{args.projects} projects, core `{ws.core}` with {len(ws.closure(ws.core))} transitive "
        f"dependants, concurrency {args.concurrency}, {args.runs} rounds; wall median (min–max), "
        "tasks executed (moon also counts the no-op `check` of each project where a task re-ran)",
        "",
        "| runner | " + " | ".join(SCENARIOS) + " |",
        "|---|" + "---|" * len(SCENARIOS),
    ]
    for runner in runners:
        lines.append(f"| {runner} | " + " | ".join(cell(runner, s) for s in SCENARIOS) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"cutoff.py: {e}", file=sys.stderr)
        sys.exit(1)
