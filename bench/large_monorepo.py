#!/usr/bin/env python3
"""vsavkin/large-monorepo's own benchmark with vx added beside its tools (issue 49).

    # a clone of github.com/vsavkin/large-monorepo, installed with npm (see docs/benchmarks.md,
    # § vsavkin/large-monorepo, for the commit and the install)
    cargo build --release -p vx-run --bin vx
    python3 bench/large_monorepo.py --checkout /tmp/lm [--restore] [--runs 10]

The repository's `benchmark.js` runs turbo, Nx and Lage in turn: one warm-up build each, then
the same command ten times, each timed from before the spawn to after the exit, and prints the
averages. This script adds vx to it the way its turbo setup is written, and changes nothing
else in the projects:

- `vx.toml` at the root: `vx init`'s templates (the five apps' `next build` with `.next/**`
  as outputs), with the app builds' inputs made complete, as Nx's defaults are (`default` and `^default`): an app
  compiles its libraries' sources (next-transpile-modules and the path aliases of
  `tsconfig.base.json`), and the libraries import the shared ones without declaring them.
  Committed in the clone (a local commit), as `turbo.json` is; `.vx/` is excluded in
  `.git/info/exclude`.
- `benchmark-vx.js`, a copy of `benchmark.js` with a vx section written like turbo's (a warm-up
  `vx run build --concurrency=10`, then the same ten times) and `node_modules/.bin/vx` linked
  to the vx under test. With `--restore`, the copy's `cleanFolders()` is uncommented, as its
  comment suggests: every run then restores all five `.next/` from the tool's local cache.

Prints each tool's runs, their median (min–max) and mean, and writes them to bench/out as JSON
and a Markdown table. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

ROOT_TOML = """\
# vx for vsavkin/large-monorepo, written by bench/large_monorepo.py: vx init's templates, with
# the inputs an app's `next build` reads spelled out (Nx's defaults are `default` and
# `^default`; turbo's setup here folds no library at all).

[workspace.input-sets.default]
inputs = ["**"]

# The libraries import the shared ones through tsconfig.base.json's path aliases, without
# declaring them in package.json: no dependency edge reaches them.
[workspace.input-sets.aliased]
workspace-inputs = ["tsconfig.base.json", "packages/shared/**"]

[workspace.tasks.build]
cache = { input-sets = ["default", "^default", "aliased"], outputs = [".next/**"] }

[workspace.tasks.dev]
persistent = true

[workspace.tasks.start]
persistent = true
"""

APPS = ["crew", "flight-simulator", "navigation", "ticket-booking", "warp-drive-manager"]

VX_SECTION = """
message('prepping vx');
spawnSync('vx', ['run', 'build', '--concurrency=10']);

message(`running vx ${NUMBER_OF_RUNS} times`);
let vxTime = 0;
for (let i = 0; i < NUMBER_OF_RUNS; ++i) {
  cleanFolders();
  const b = new Date();
  spawnSync('vx', ['run', 'build', '--concurrency=10']);
  const a = new Date();
  vxTime += a.getTime() - b.getTime();
  console.log(`The command ran in ${a.getTime() - b.getTime()}ms`);
}
const averageVxTime = vxTime / NUMBER_OF_RUNS;

"""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def git(checkout: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=checkout, check=True, capture_output=True,
                          text=True).stdout.strip()


def add_vx(checkout: Path, vx: Path) -> None:
    """vx's configuration and binary in the clone; a local commit holds the vx.toml files."""
    (checkout / "vx.toml").write_text(ROOT_TOML)
    for app in APPS:
        # The template covers the build; an app's own file would only repeat it.
        (checkout / "apps" / app / "vx.toml").unlink(missing_ok=True)
    exclude = checkout / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    if ".vx/" not in (exclude.read_text() if exclude.exists() else ""):
        with exclude.open("a") as f:
            f.write(".vx/\nbenchmark-vx.js\n")
    link = checkout / "node_modules" / ".bin" / "vx"
    link.unlink(missing_ok=True)
    link.symlink_to(vx.resolve())
    # A mirror may leave out its largest blobs (here a README animation): a commit cannot be
    # made over an index entry whose blob is absent, so such an entry leaves the index.
    for path in git(checkout, "ls-files", "--deleted").splitlines():
        blob = git(checkout, "ls-files", "-s", "--", path).split()[1]
        if subprocess.run(["git", "cat-file", "-e", blob], cwd=checkout).returncode != 0:
            log(f"{path}: its blob is not in the clone; left out of the index")
            git(checkout, "rm", "-q", "--cached", "--", path)
    git(checkout, "add", "-A", "--", "vx.toml", *[f"apps/{a}" for a in APPS])
    if git(checkout, "status", "--porcelain", "--", "vx.toml"):
        git(checkout, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit",
            "-qm", "vx beside turbo, Nx and Lage (bench/large_monorepo.py)")


def patched_benchmark(checkout: Path, restore: bool) -> Path:
    text = (checkout / "benchmark.js").read_text()
    marker = "message('results');"
    if marker not in text:
        raise SystemExit("benchmark.js has no results section: not the script this was written for")
    text = text.replace(marker, VX_SECTION + marker)
    text = text.replace("console.log(`average nx time is: ${averageNxTime}`);",
                        "console.log(`average nx time is: ${averageNxTime}`);\n"
                        "console.log(`average vx time is: ${averageVxTime}`);")
    if restore:
        body = re.search(r"function cleanFolders\(\) \{\n(.*?)\n\}", text, re.S)
        if body is None:
            raise SystemExit("benchmark.js has no cleanFolders(): not the script this was written for")
        uncommented = "\n".join(re.sub(r"^(\s*)// ?", r"\1", line)
                                for line in body.group(1).splitlines()
                                if "uncomment this" not in line)
        text = text.replace(body.group(1), uncommented)
    out = checkout / "benchmark-vx.js"
    out.write_text(text)
    return out


def parse(output: str) -> dict[str, list[float]]:
    """The timed runs of each tool, from the script's `running <tool> N times` sections."""
    runs: dict[str, list[float]] = {}
    tool = None
    for line in output.splitlines():
        m = re.match(r"running (\w+) \d+ times", line)
        if m:
            tool = m.group(1)
            runs[tool] = []
            continue
        if line.startswith("prepping"):
            tool = None
        m = re.match(r"The command ran in (\d+)ms", line)
        if m and tool:
            runs[tool].append(float(m.group(1)))
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", type=Path, required=True)
    ap.add_argument("--vx", type=Path, default=REPO / "target" / "release" / "vx")
    ap.add_argument("--restore", action="store_true",
                    help="uncomment cleanFolders(): every timed run restores the apps' .next/")
    ap.add_argument("--out", type=Path, default=BENCH / "out")
    args = ap.parse_args()
    checkout = args.checkout.resolve()
    # The repository's own commit: the newest that is not this script's.
    commit = git(checkout, "log", "-1", "--format=%H", "--invert-grep",
                 "--grep=bench/large_monorepo.py")
    add_vx(checkout, args.vx)
    script = patched_benchmark(checkout, args.restore)
    versions = {}
    for tool in ("turbo", "nx", "lage"):
        manifest = checkout / "node_modules" / tool / "package.json"
        versions[tool] = json.loads(manifest.read_text()).get("version", "?") if manifest.exists() else "?"
    proc = subprocess.run([str(args.vx), "--version"], capture_output=True, text=True)
    versions["vx"] = " ".join(proc.stdout.split()[1:3])
    log(f"running {script.name} in {checkout} ({'restore' if args.restore else 'as published'})")
    env = {**os.environ, "TURBO_TELEMETRY_DISABLED": "1", "NX_NO_CLOUD": "true",
           "DO_NOT_TRACK": "1"}
    proc = subprocess.run(["node", script.name], cwd=checkout, env=env, capture_output=True,
                          text=True)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (args.out / f"large-monorepo-{stamp}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        log(f"node {script.name} failed (exit {proc.returncode}); see the log in {args.out}")
        return 1
    runs = parse(proc.stdout)
    rows = []
    for tool, times in runs.items():
        rows.append({"tool": tool, "runs": times, "median": statistics.median(times),
                     "min": min(times), "max": max(times), "mean": statistics.mean(times),
                     "version": versions.get(tool, "")})
    fastest_peer = min((r["median"] for r in rows if r["tool"] != "vx"), default=None)
    lines = [f"large-monorepo {commit[:12]}, {'restore (cleanFolders)' if args.restore else 'as published'},"
             f" {NUMBER_OF_RUNS_NOTE}", "", "| tool | median (min–max) | mean | ÷ fastest peer |",
             "|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['median'] / fastest_peer:.2f}×" if fastest_peer else ""
        lines.append(f"| {r['tool']} {r['version']} | {r['median']:.0f} ms ({r['min']:.0f}–{r['max']:.0f}) "
                     f"| {r['mean']:.1f} ms | {ratio} |")
    table = "\n".join(lines)
    print(table)
    (args.out / f"large-monorepo-{stamp}.md").write_text(table + "\n")
    (args.out / f"large-monorepo-{stamp}.json").write_text(json.dumps(
        {"commit": commit, "restore": args.restore, "rows": rows}, indent=1))
    return 0


NUMBER_OF_RUNS_NOTE = "10 timed runs per tool after one warm-up (benchmark.js)"

if __name__ == "__main__":
    sys.exit(main())
