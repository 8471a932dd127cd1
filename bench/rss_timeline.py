#!/usr/bin/env python3
"""When in a run vx's memory peaks: its resident set sampled beside its own `--profile` trace.

    python3 bench/rss_timeline.py --ws bench/out/memory/ws [--vx target/release/vx]
        [--every-ms 5] [-- run check --all ...]

Runs `vx <args>` in the workspace twice (default args: `run check --all --output-logs=none`,
with `VX_SNAPSHOT=0`: the whole way, so both runs do the same): first with
`--profile=<out>/trace.json` for the times of vx's own spans on its main thread (`plan`,
`read ahead, keys and hits of stable tasks`, ...), then without it (a trace of tens of thousands
of spans is itself held until the end) while reading `/proc/<pid>/status` every few
milliseconds (VmRSS). Prints, for each span and for the time after the last one (the end:
history rows, the footer, the exit), the largest RSS the second run had while the first was in
that span, then the moment and the phase of the peak. The two runs' times differ by a few
percent, and the samples count from the spawn: a phase boundary is right to about that.
Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ws", type=Path, required=True, help="the workspace to run in")
    ap.add_argument("--vx", type=Path, default=REPO / "target" / "release" / "vx")
    ap.add_argument("--every-ms", type=float, default=5.0)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "rss_timeline")
    ap.add_argument("args", nargs="*", default=["run", "check", "--all", "--output-logs=none"])
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    trace = args.out / "trace.json"
    env = {**os.environ, "VX_SNAPSHOT": "0", "NO_COLOR": "1"}
    argv = [str(args.vx.resolve()), *args.args]
    subprocess.run(argv + [f"--profile={trace}"], cwd=args.ws, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    child = subprocess.Popen(argv, cwd=args.ws, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    samples: list[tuple[float, int]] = []
    status = Path(f"/proc/{child.pid}/status")
    while child.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmRSS:"):
                    samples.append((time.monotonic() - started, int(line.split()[1])))
                    break
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(args.every_ms / 1000)
    if child.wait() != 0:
        raise SystemExit(f"vx exited {child.returncode}")
    if not samples:
        raise SystemExit("no sample taken")
    data = json.loads(trace.read_text(encoding="utf-8"))
    events = data["traceEvents"] if isinstance(data, dict) else data
    own = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "vx"
                  and e.get("tid") in (0, "0")), key=lambda e: e["ts"])
    spans = [(e["name"], e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6) for e in own]
    last = max((end for _, _, end in spans), default=0.0)
    spans.append(("(after the last span: history, footer, exit)", last, float("inf")))
    print(f"{len(samples)} samples every {args.every_ms:g} ms; vx {' '.join(args.args)}")
    print("| span | from | to | largest RSS sampled |")
    print("|---|---:|---:|---:|")
    for name, start, end in spans:
        inside = [kib for at, kib in samples if start <= at < end]
        if inside:
            to = "end" if end == float("inf") else f"{end * 1000:.0f} ms"
            print(f"| {name} | {start * 1000:.0f} ms | {to} | {max(inside) / 1024:.0f} MiB |")
    at, peak = max(samples, key=lambda s: s[1])
    phase = next((name for name, start, end in reversed(spans) if start <= at < end), "?")
    print(f"\npeak {peak / 1024:.0f} MiB at {at * 1000:.0f} ms, in: {phase}")


if __name__ == "__main__":
    main()
