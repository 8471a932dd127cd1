#!/usr/bin/env bash
# The side-by-side benchmark in one command: install the pinned turbo and nx, build vx (release),
# then compare vx, Turborepo, Nx and moon on 100, 1,000 and 5,000 projects.
#
#   bench/run.sh                                   # all sizes, default runs, Nx skipped at 5,000
#   SIZES=100,1000 bench/run.sh --runs 3           # extra arguments go to compare.py
#   SKIP= bench/run.sh                             # skip nothing (passed as --skip)
#   bench/run.sh --turbo-npm                       # turbo's tasks through the real `npm run`
#   VX=/path/to/vx bench/run.sh                    # another vx binary (no build)
#
# turbo runs every task as `npm run <script>`; npm starts Node and reads every workspace
# package.json on each call (about 0.3 s of CPU per task at 100 projects, 2.4 s at 5,000 on the
# 2-core machine: a full turbo build of 5,000 projects would take over 3 hours). By default
# bench/npm-shim stands in for npm and runs the script with `sh -c`, as vx and Nx do, so every
# runner executes the same commands; --turbo-npm measures turbo as shipped.
#
# At 5,000 projects Nx 24 had not finished a cold run after 30 minutes (8-12 GB resident, with
# the 16 GiB heap compare.py gives it) and moon takes about 16 minutes a run (one `git ls-files`
# per project), so SKIP defaults to nx@5000,moon@5000 (docs/benchmarks.md, run D).
#
# Results: a Markdown table per size on stdout and in bench/out/results-<stamp>.md, every run in
# bench/out/results-<stamp>.json; progress on stderr. See bench/README.md for the flags.
set -euo pipefail

cd "$(dirname "$0")/.."
bench/install.sh
if [[ -z ${VX:-} ]]; then
    cargo build --release -p vx-run
fi
exec python3 bench/compare.py --sizes "${SIZES:-100,1000,5000}" --skip "${SKIP-nx@5000,moon@5000}" "$@"
