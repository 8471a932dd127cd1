#!/usr/bin/env bash
# M1 planning benchmark: wall time of `vx run build --all --dry` on generated workspaces.
#
#   bench/plan.sh               # 1,000 projects
#   bench/plan.sh --all-sizes   # 100, 1,000 and 5,000 projects
#   VX=target/debug/vx RUNS=9 bench/plan.sh
#
# Workspaces are generated on first use under bench/out/ws-<N> (git-ignored) with
# bench/generate.py and reused afterwards; delete them to regenerate. The vx binary is $VX
# (default target/release/vx, relative to the repository root). Each size gets one warm-up run
# (which must succeed), then $RUNS timed runs (default 5); the table shows their median, min
# and max. hyperfine is used when installed, else a plain loop over `date +%s%N`
# (force either with TIMER=hyperfine or TIMER=date).
set -euo pipefail

cd "$(dirname "$0")/.."
VX=${VX:-target/release/vx}
RUNS=${RUNS:-5}
SEED=${SEED:-1}
TIMER=${TIMER:-auto}  # auto | hyperfine | date
OUT=bench/out

sizes=(1000)
for arg in "$@"; do
    case $arg in
        --all-sizes) sizes=(100 1000 5000) ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "plan.sh: unknown argument \`$arg\` (try --all-sizes)" >&2; exit 2 ;;
    esac
done

if [[ $TIMER == auto ]]; then
    TIMER=$(command -v hyperfine >/dev/null && echo hyperfine || echo date)
fi
if [[ $TIMER != hyperfine && $TIMER != date ]]; then
    echo "plan.sh: TIMER must be auto, hyperfine or date (got \`$TIMER\`)" >&2
    exit 2
fi

if [[ ! -x $VX ]]; then
    echo "plan.sh: no vx binary at \`$VX\`" >&2
    echo "  hint: cargo build --release, or set VX=path/to/vx" >&2
    exit 2
fi
VX=$(cd "$(dirname "$VX")" && pwd)/$(basename "$VX")

# Prints "median min max" in milliseconds for $RUNS runs of: vx -C <ws> run build --all --dry
measure() {
    local ws=$1
    if [[ $TIMER == hyperfine ]]; then
        local json log
        json=$(mktemp)
        log=$(mktemp)
        # hyperfine's warnings (outliers, slow first run) go to a log shown only on failure.
        if ! hyperfine --style none --warmup 1 --runs "$RUNS" --export-json "$json" \
            "'$VX' -C '$ws' run build --all --dry" >/dev/null 2>"$log"; then
            cat "$log" >&2
            return 1
        fi
        rm -f "$log"
        python3 - "$json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f'{r["median"] * 1000:.1f} {r["min"] * 1000:.1f} {r["max"] * 1000:.1f}')
EOF
        rm -f "$json"
    else
        local times=() start end i
        for ((i = 0; i < RUNS; i++)); do
            start=$(date +%s%N)
            "$VX" -C "$ws" run build --all --dry >/dev/null
            end=$(date +%s%N)
            times+=($(((end - start) / 1000)))  # microseconds
        done
        printf '%s\n' "${times[@]}" | sort -n | awk '
            { t[NR] = $1 }
            END {
                m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
                printf "%.1f %.1f %.1f\n", m / 1000, t[1] / 1000, t[NR] / 1000
            }'
    fi
}

echo "vx: $VX ($("$VX" --version 2>/dev/null || echo 'version unknown'))"
echo "runs per size: $RUNS (median, min, max), timer: $TIMER"
echo
rows=()
for n in "${sizes[@]}"; do
    ws=$OUT/ws-$n
    if [[ ! -d $ws/.git ]]; then
        python3 bench/generate.py --projects "$n" --out "$ws" --seed "$SEED" --force
    fi
    ws=$(cd "$ws" && pwd)
    # Warm-up, and a check that the plan succeeds at all (its error is shown if not).
    if ! plan=$("$VX" -C "$ws" run build --all --dry 2>&1); then
        echo "$plan" >&2
        echo "plan.sh: \`vx run build --all --dry\` failed on $ws" >&2
        exit 1
    fi
    edges=$(grep -o 'workspace:\*' -r "$ws/packages" --include package.json | wc -l | tr -d ' ')
    result=$(measure "$ws")
    read -r median min max <<<"$result"
    rows+=("$(printf '%8s %8s %12s %10s %10s' "$n" "$edges" "$median" "$min" "$max")")
done

printf '%8s %8s %12s %10s %10s\n' projects edges "median ms" "min ms" "max ms"
printf '%s\n' "${rows[@]}"
