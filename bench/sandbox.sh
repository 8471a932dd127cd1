#!/usr/bin/env bash
# The cost of the sandbox (SBX): the same tasks run plain and sandboxed, medians of alternating
# runs on one generated workspace. Turborepo and Nx have no sandbox to compare with, so the
# ratio is sandboxed over plain vx.
#
#   bench/sandbox.sh [PROJECTS=20] [RUNS=11] [VX=target/release/vx]
set -euo pipefail
cd "$(dirname "$0")/.."
projects=${1:-20}
runs=${2:-11}
vx=$(realpath "${3:-target/release/vx}")
ws=$(mktemp -d /tmp/vx-bench-sandbox.XXXXXX)
trap 'rm -rf "$ws"' EXIT
cd "$ws"
git init -q
printf '[workspace]\nmembers = ["packages/*"]\n' > vx.toml
for i in $(seq 1 "$projects"); do
  mkdir -p "packages/p$i/src"
  echo "{\"name\":\"p$i\"}" > "packages/p$i/package.json"
  echo x > "packages/p$i/src/a.txt"
  cat > "packages/p$i/vx.toml" <<TOML
[tasks.plain]
command = 'cat src/a.txt > /dev/null; ls src > /dev/null'
[tasks.boxed]
command = 'cat src/a.txt > /dev/null; ls src > /dev/null'
sandbox = { read = ['src'] }
TOML
done
git add -A && git -c user.email=b@x -c user.name=b commit -qm bench
# Warm-up (page cache, the probe's first bwrap).
"$vx" run plain --all >/dev/null && "$vx" run boxed --all >/dev/null
declare -A times=([plain]="" [boxed]="")
for _ in $(seq 1 "$runs"); do
  for task in plain boxed; do
    start=$(date +%s%N)
    "$vx" run "$task" --all --concurrency 2 >/dev/null
    end=$(date +%s%N)
    times[$task]+="$(( (end - start) / 1000000 )) "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
plain=$(echo "${times[plain]}" | median)
boxed=$(echo "${times[boxed]}" | median)
echo "projects $projects, runs $runs, concurrency 2"
echo "plain  ${plain} ms   (${times[plain]})"
echo "boxed  ${boxed} ms   (${times[boxed]})"
awk -v p="$plain" -v b="$boxed" -v n="$projects" 'BEGIN { printf "boxed/plain %.2fx, %.1f ms more per task\n", b / p, (b - p) * 2 / n }'
