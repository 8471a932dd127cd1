#!/usr/bin/env python3
"""Side-by-side benchmark of vx, Turborepo, Nx and moon on generated workspaces.

    bench/install.sh                         # pinned turbo, nx and moon under bench/node_modules
    python3 bench/compare.py --sizes 100,1000 [--runs 5] [--runs-cold 3] [--concurrency 2]

For each size N: generate one workspace with bench/generate.py (all three configuration
flavours in one commit), clone it into one independent copy per runner (vx, turbo, nx, moon) and one
for the floors, check that turbo, Nx and moon see the same project edges as vx and as the package.json
files, measure the bare per-task commands (for the list-schedule floor), then time five
scenarios of `check` over every project:

  cold      dist/ and every cache deleted before each run
  nothing   nothing changed: every task cached, every output present (vx replays its snapshot:
            the untimed warm-up run before found everything up to date and wrote it)
  whole     the same, vx alone, with VX_SNAPSHOT=0: vx goes the whole way (config, listing,
            keys, lookups), as on the first nothing-changed run after any change
  restore   every dist/ deleted before each run, caches kept: every output restored
  leaf      a source file of a project nothing depends on gets new content before each run
  core      a source file of the layer-0 project with the most transitive dependants gets new
            content before each run (it and all its dependants re-run)

Within each repetition the runners alternate (vx, turbo, nx, moon, floor, vx, ...). Each figure
is the median of the repetitions. Each run records wall time, the CPU time (user + sys) and the
peak RSS of the process tree (os.wait4), and for vx its own CPU and RSS from its counters line.
Every run's exit status is checked, and so is its work (outputs present, cache-hit counts).

Output: a Markdown table per size on stdout and in bench/out/results-<stamp>.md, the raw runs in
bench/out/results-<stamp>.json. Progress goes to stderr. Python 3 standard library only.
See bench/README.md and docs/benchmarks.md for the method.
"""

from __future__ import annotations

import argparse
import datetime
import heapq
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
NODE_MODULES = BENCH / "node_modules"

RUNNERS = ("vx", "turbo", "nx", "moon")
# Nx's V8 heap limit (fairness note 11 in docs/benchmarks.md).
NX_HEAP_MIB = 16384
SCENARIOS = ("cold", "nothing", "whole", "restore", "leaf", "core")
TITLES = {
    "cold": "cold (no cache, no outputs)",
    "nothing": "nothing changed",
    "whole": "nothing changed, no snapshot (vx with VX_SNAPSHOT=0)",
    "restore": "all outputs restored",
    "leaf": "one leaf file edited",
    "core": "one core file edited",
}
EDITED_FILE = "src/a.txt"  # every generated project has it
# The cached tasks of every project (PERF-1: three); `check` groups them. Only build and test
# depend on upstream work (build on ^build, test on build); lint reads its own sources alone.
TASKS = ("build", "test", "lint")
UPSTREAM_TASKS = ("build", "test")

# Environment for every timed run: telemetry, update checks, daemons, cloud and TUIs off.
RUN_ENV = {
    "TURBO_TELEMETRY_DISABLED": "1",
    "DO_NOT_TRACK": "1",
    "TURBO_NO_UPDATE_NOTIFIER": "1",
    "NX_DAEMON": "false",
    "NX_NO_CLOUD": "true",
    "NX_TUI": "false",
    "MOON_TELEMETRY": "false",
    # moon uses the tools on PATH (sh) rather than installing a toolchain.
    "MOON_TOOLCHAIN_FORCE_GLOBALS": "true",
    "NO_COLOR": "1",
    "VX_LOG": "vx::counters=info",
    # No user or system git configuration (fsmonitor, untracked cache, hooks, ...) for anyone.
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class BenchError(Exception):
    """A failure that aborts the benchmark with a clear message."""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"
    if seconds < 100:
        return f"{seconds:.2f} s"
    return f"{seconds:.0f} s"


def fmt_mib(kib: float | None) -> str:
    return "—" if kib is None else f"{kib / 1024:.0f} MiB" if kib >= 10240 else f"{kib / 1024:.1f} MiB"


def fmt_ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b <= 0:
        return "—"
    r = a / b
    return f"{r:.3f}×" if r < 0.1 else f"{r:.2f}×" if r < 10 else f"{r:.1f}×"


def median(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def per_size(spec: str, option: str) -> dict[int | None, int]:
    """`5` or `5,5000=2`: a default and per-size overrides."""
    result: dict[int | None, int] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            if "=" in item:
                size, value = item.split("=", 1)
                result[int(size)] = int(value)
            else:
                result[None] = int(item)
        except ValueError:
            raise SystemExit(f"compare.py: bad {option} `{spec}` (want e.g. 5 or 5,5000=2)")
    if None not in result:
        raise SystemExit(f"compare.py: {option} `{spec}` has no default (e.g. 5,5000=2)")
    if any(v < 1 for v in result.values()):
        raise SystemExit(f"compare.py: {option} values must be at least 1")
    return result


def parse_skip(spec: str) -> list[tuple[str, str | None, int | None]]:
    """`turbo@5000,nx:cold` -> [(runner, scenario or None, size or None), ...]."""
    rules = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        what, _, size = item.partition("@")
        runner, _, scenario = what.partition(":")
        if runner not in RUNNERS or (scenario and scenario not in SCENARIOS):
            raise SystemExit(f"compare.py: bad --skip item `{item}` (want RUNNER[:SCENARIO][@SIZE], "
                             f"runners {','.join(RUNNERS)}, scenarios {','.join(SCENARIOS)})")
        try:
            rules.append((runner, scenario or None, int(size) if size else None))
        except ValueError:
            raise SystemExit(f"compare.py: bad size in --skip item `{item}`")
    return rules


def skipped(rules: list, runner: str, scenario: str, n: int) -> bool:
    return any(r == runner and s in (None, scenario) and size in (None, n) for r, s, size in rules)


# --- Processes ---------------------------------------------------------------------------------

def become_subreaper() -> bool:
    """Linux: adopt orphaned descendants (PR_SET_CHILD_SUBREAPER), so that processes a tool
    leaves behind (Nx's plugin workers) are reaped here and their CPU is counted."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def children_of_self() -> list[int]:
    pids = []
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                pids.append(int(entry))
    return pids


def collect_orphans(pgid: int | None, grace: float = 5.0) -> dict:
    """Reap what a run left behind: adopted orphans (we are their subreaper) and members of its
    process group. Waits up to `grace` seconds, then kills them (they are ours and would disturb
    the next runs). Returns their count, summed CPU and largest RSS."""
    found = {"orphans": 0, "cpu": 0.0, "maxrss_kib": 0, "killed": False}
    deadline = time.monotonic() + grace
    while True:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            pid, usage = -1, None
        if pid > 0:
            found["orphans"] += 1
            found["cpu"] += usage.ru_utime + usage.ru_stime
            found["maxrss_kib"] = max(found["maxrss_kib"], usage.ru_maxrss)
            continue
        group_alive = False
        if pgid is not None:
            try:
                os.killpg(pgid, 0)
                group_alive = True
            except (ProcessLookupError, PermissionError):
                pass
        if pid < 0 and not group_alive:
            return found  # no child of ours left, nothing of the group left
        if time.monotonic() > deadline:
            if found["killed"]:
                return found  # what is left after SIGKILL and a grace period is not ours to wait for
            else:
                found["killed"] = True
                if pgid is not None and group_alive:
                    try:
                        os.killpg(pgid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                for child in children_of_self():
                    try:
                        os.kill(child, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                deadline = time.monotonic() + grace
        time.sleep(0.05)


TIME = Path("/usr/bin/time")  # GNU time (Debian's `time`): see run_measured


def run_measured(argv: list[str], cwd: Path, env: dict, out: Path, err: Path, timeout: float) -> dict:
    """Run argv with stdout/stderr to files; wall time, rusage of the waited tree, exit code.

    The child leads a new process group, so a timeout kills the whole tree (only what this
    function started). os.wait4's rusage covers the child and every descendant that was waited
    for: CPU is the sum, ru_maxrss the largest single process. Descendants orphaned by the tool
    are adopted (subreaper) and reaped after it exits: their CPU and RSS are added, the wall
    time stops when the tool itself exits. The peak RSS is taken through GNU time when it is
    installed (see below); without it, the figure includes this harness's own peak."""
    stray = collect_orphans(None, grace=0)
    if stray["orphans"]:
        log(f"warning: reaped {stray['orphans']} stray processes before a run")
    # Linux's ru_maxrss survives exec: a process exec'd by this harness reads at least the
    # harness's own peak (hundreds of MiB at 10,000 projects). GNU time is small and forks the
    # tool, so the tool's tree starts from time's few MiB; time writes the tree's peak to a file.
    peak_file = out.with_suffix(out.suffix + ".peak")
    peak_file.unlink(missing_ok=True)
    timed = ["/usr/bin/time", "-f", "%M", "-o", str(peak_file), *argv] if TIME.exists() else argv
    with open(out, "wb") as fout, open(err, "wb") as ferr:
        started = time.perf_counter()
        proc = subprocess.Popen(timed, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=fout,
                                stderr=ferr, start_new_session=True)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    left = collect_orphans(proc.pid)
    if timed_out.is_set():
        raise BenchError(f"timed out after {timeout:.0f} s: {' '.join(argv)} (in {cwd})")
    cpu = usage.ru_utime + usage.ru_stime
    tree_peak = usage.ru_maxrss
    if timed is not argv:
        # the last line: time writes "Command exited with non-zero status N" above it
        lines = peak_file.read_text().split() if peak_file.exists() else []
        tree_peak = int(lines[-1]) if lines and lines[-1].isdigit() else 0
    return {
        "wall": wall,
        "user": usage.ru_utime,
        "sys": usage.ru_stime,
        "cpu": cpu + left["cpu"],
        "maxrss_kib": max(tree_peak, left["maxrss_kib"]),
        "exit": proc.returncode,
        "orphans": left["orphans"],
        "orphan_cpu": left["cpu"],
        "killed_leftovers": left["killed"],
    }


def quiet(argv: list[str], cwd: Path, env: dict | None = None) -> str:
    """Run an untimed helper command; its stdout, or a BenchError with its stderr."""
    proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    collect_orphans(None)  # e.g. Nx's plugin workers: not to be counted in the next timed run
    if proc.returncode != 0:
        raise BenchError(f"`{' '.join(map(str, argv))}` failed in {cwd} (exit {proc.returncode}):\n"
                         f"{proc.stderr.strip()[-3000:]}")
    return proc.stdout


def small_bench_parser(doc: str, projects: int, rounds: int, concurrency: int,
                       out: str) -> argparse.ArgumentParser:
    """The options the small vx-only benches (frozen.py, memory.py, phases.py) share, with
    their defaults; each adds its own before parsing."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--projects", type=int, default=projects)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--vx", type=Path, default=REPO / "target" / "release" / "vx")
    ap.add_argument("--concurrency", type=int, default=concurrency)
    ap.add_argument("--out", type=Path, default=BENCH / "out" / out)
    return ap


def fresh_workspace(out: Path, projects: int, vx_source: Path) -> tuple[Path, Path, str]:
    """For the small vx-only benches (frozen.py, memory.py): an emptied `out` holding a copy of
    the vx binary (the source may be rebuilt meanwhile) and a generated workspace in the turbo
    flavour (package.json scripts, which `Workspace` reads). Returns (vx, workspace, commit)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    vx = out / "vx"
    shutil.copy2(vx_source, vx)
    ws = out / "ws"
    quiet([sys.executable, str(BENCH / "generate.py"), "--projects", str(projects),
           "--out", str(ws), "--tools", "vx,turbo"], REPO)
    return vx, ws, quiet(["git", "rev-parse", "HEAD"], ws).strip()


def built_leaf_workspace(args: argparse.Namespace, env: dict, lock: bool = False) -> tuple:
    """For the leaf-edit benches (frozen.py, phases.py): a fresh workspace (`fresh_workspace`)
    built once with `vx run check --all`, `vx.lock` written when `lock`, left 1.1 s so that
    nothing it wrote is racy for git, and the index refreshed. Returns (vx, ws, commit, graph,
    the leaf's edited file, its original bytes, the run's argv)."""
    vx, ws, commit = fresh_workspace(args.out, args.projects, args.vx)
    graph = Workspace(ws)
    leaf_file = ws / graph.dir[graph.leaf] / "src" / "a.txt"
    base = [str(vx), "run", "check", "--all", f"--concurrency={args.concurrency}",
            "--output-logs=none"]
    quiet(base, ws, env)
    if lock:
        quiet([str(vx), "lock"], ws, env)
    time.sleep(1.1)
    quiet(["git", "update-index", "-q", "--refresh"], ws, env)
    return vx, ws, commit, graph, leaf_file, leaf_file.read_bytes(), base


# --- The workspace -----------------------------------------------------------------------------

class Workspace:
    """The project graph as the generated package.json files state it."""

    def __init__(self, root: Path) -> None:
        self.projects: list[str] = []  # names, sorted by directory
        self.dir: dict[str, str] = {}  # name -> relative directory
        self.deps: dict[str, list[str]] = {}
        self.scripts: dict[str, dict[str, str]] = {}
        for pdir in sorted((root / "packages").iterdir()):
            manifest = json.loads((pdir / "package.json").read_text(encoding="utf-8"))
            name = manifest["name"]
            self.projects.append(name)
            self.dir[name] = f"packages/{pdir.name}"
            self.deps[name] = sorted(manifest.get("dependencies", {}))
            self.scripts[name] = manifest.get("scripts", {})
            for task in TASKS:
                if task not in self.scripts[name]:
                    raise BenchError(f"{pdir}/package.json has no `{task}` script: generate the "
                                     f"workspace with the turbo flavour (the default --tools)")
        self.dependants: dict[str, list[str]] = {p: [] for p in self.projects}
        for p in self.projects:
            for d in self.deps[p]:
                self.dependants[d].append(p)
        self.edges = {(p, d) for p in self.projects for d in self.deps[p]}
        # The leaf: the last project that nothing depends on. The core: the project without
        # dependencies (layer 0) with the most transitive dependants (the first on a tie).
        self.leaf = [p for p in self.projects if not self.dependants[p]][-1]
        roots = [p for p in self.projects if not self.deps[p]]
        self.core = max(roots, key=lambda p: (len(self.closure(p)), -self.projects.index(p)))

    def closure(self, project: str) -> set[str]:
        """Every transitive dependant of project (not itself)."""
        seen: set[str] = set()
        stack = [project]
        while stack:
            for d in self.dependants[stack.pop()]:
                if d not in seen:
                    seen.add(d)
                    stack.append(d)
        return seen

    def executed(self, scenario: str) -> int:
        """How many tasks execute in a scenario: every task cold; the edited project's three,
        and build and test of each of its dependants."""
        affected = self.affected(scenario)
        if scenario == "cold":
            return len(TASKS) * len(affected)
        if not affected:
            return 0
        return len(UPSTREAM_TASKS) * len(affected) + len(TASKS) - len(UPSTREAM_TASKS)

    def executed_tasks(self, scenario: str) -> list[str]:
        """The ids of the tasks that execute in a scenario (see `executed`)."""
        affected = self.affected(scenario)
        edited = self.leaf if scenario == "leaf" else self.core
        return [f"{p}#{t}" for p in self.projects if p in affected for t in TASKS
                if scenario == "cold" or t in UPSTREAM_TASKS or p == edited]

    def affected(self, scenario: str) -> set[str]:
        """Projects whose build and test re-run in a scenario (and the edited project's lint)."""
        if scenario == "cold":
            return set(self.projects)
        if scenario == "leaf":
            return {self.leaf}
        if scenario == "core":
            return {self.core} | self.closure(self.core)
        return set()


def list_schedule(ws: Workspace, tasks: list[str], durations: dict[str, float], slots: int) -> dict:
    """Makespan of `tasks` (ids, in workspace order) on `slots` workers: a list schedule that
    always starts the ready task with the longest remaining path (critical-path priority).
    Other tasks count as done (cached). durations: task id -> seconds."""
    succ: dict[str, list[str]] = {t: [] for t in tasks}
    indegree = {t: 0 for t in tasks}
    for p in ws.projects:
        edges = [(f"{d}#build", f"{p}#build") for d in ws.deps[p]]
        edges.append((f"{p}#build", f"{p}#test"))
        for a, b in edges:
            if a in succ and b in succ:
                succ[a].append(b)
                indegree[b] += 1
    # Topological order (Kahn), then the longest path from each task to the end.
    order = [t for t in tasks if indegree[t] == 0]
    pending = dict(indegree)
    for t in order:
        for s in succ[t]:
            pending[s] -= 1
            if pending[s] == 0:
                order.append(s)
    if len(order) != len(tasks):
        raise BenchError("the task graph has a cycle")
    rank: dict[str, float] = {}
    for t in reversed(order):
        rank[t] = durations[t] + max((rank[s] for s in succ[t]), default=0.0)
    position = {t: i for i, t in enumerate(tasks)}
    ready = [(-rank[t], position[t], t) for t in tasks if indegree[t] == 0]
    heapq.heapify(ready)
    running: list[tuple[float, int, str]] = []
    now, free = 0.0, slots
    while ready or running:
        while free and ready:
            _, i, t = heapq.heappop(ready)
            heapq.heappush(running, (now + durations[t], i, t))
            free -= 1
        now, _, t = heapq.heappop(running)
        free += 1
        for s in succ[t]:
            indegree[s] -= 1
            if indegree[s] == 0:
                heapq.heappush(ready, (-rank[s], position[s], s))
    work = sum(durations[t] for t in tasks)
    return {"makespan": now, "critical_path": max(rank.values(), default=0.0), "work": work,
            "tasks": len(tasks)}


# --- Runners -----------------------------------------------------------------------------------

def turbo_binary() -> Path:
    """The platform binary itself: node_modules/.bin/turbo is a Node shim that starts it (and
    would cost one Node start-up per invocation)."""
    for candidate in sorted(NODE_MODULES.glob("@turbo/*/bin/turbo")):
        if os.access(candidate, os.X_OK):
            return candidate
    shim = NODE_MODULES / ".bin" / "turbo"
    if shim.exists():
        log("warning: no platform turbo binary under bench/node_modules/@turbo; using the Node shim")
        return shim
    raise BenchError("turbo is not installed: run bench/install.sh")


def moon_binary() -> Path:
    """moon's native binary (the npm package's `moon` is a Node shim that starts it, at about
    175 ms a call)."""
    for candidate in sorted(NODE_MODULES.glob("@moonrepo/core-*/moon")):
        if os.access(candidate, os.X_OK):
            return candidate
    raise BenchError("moon is not installed: run bench/install.sh")


def nx_entry() -> Path:
    entry = NODE_MODULES / "nx" / "dist" / "bin" / "nx.js"
    if not entry.exists():
        raise BenchError("nx is not installed: run bench/install.sh")
    return entry


def package_version(name: str) -> str:
    try:
        return json.loads((NODE_MODULES / name / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


class Tools:
    def __init__(self, vx: Path, node: str) -> None:
        self.vx = vx
        self.turbo = turbo_binary()
        self.node = node
        self.nx = nx_entry()
        self.moon = moon_binary()

    def argv(self, runner: str, copy: Path, concurrency: int) -> list[str]:
        if runner == "vx":
            return [str(self.vx), "-C", str(copy), "run", "check", "--all",
                    "--concurrency", str(concurrency), "--output-logs=none"]
        if runner == "turbo":
            return [str(self.turbo), "run", "check", f"--concurrency={concurrency}",
                    "--output-logs=none", "--ui=stream"]
        if runner == "nx":
            return [self.node, str(self.nx), "run-many", "-t", "check",
                    f"--parallel={concurrency}", "--outputStyle=static"]
        if runner == "moon":
            return [str(self.moon), f"--concurrency={concurrency}", "run", ":check"]
        raise AssertionError(runner)


def parse_counters(stderr: str) -> dict:
    """vx's ` INFO vx::counters: spawns=0 files_hashed=0 ...` line as key=value pairs."""
    fields: dict = {}
    for line in stderr.splitlines():
        if "vx::counters" in line:
            fields = {}
            for token in line.split("vx::counters", 1)[1].lstrip(":").split():
                if "=" in token:
                    key, value = token.split("=", 1)
                    try:
                        fields[key] = int(value)
                    except ValueError:
                        try:
                            fields[key] = float(value)
                        except ValueError:
                            fields[key] = value
    return fields


def cached_count(runner: str, text: str) -> tuple[int, int] | None:
    """(tasks served from the cache, tasks counted) from a runner's summary, None if absent.
    Nx counts its nx:noop `check` tasks too (never hits)."""
    text = ANSI.sub("", text)
    if runner == "vx":
        m = re.search(r"result\s+(\d+) tasks\s+\S+\s+(\d+) cached", text)
        return (int(m.group(2)), int(m.group(1))) if m else None
    if runner == "turbo":
        m = re.search(r"Cached:\s+(\d+) cached, (\d+) total", text)
        return (int(m.group(1)), int(m.group(2))) if m else None
    if runner == "nx":
        m = re.search(r"Cache:\s+(\d+)/(\d+) hit", text)
        return (int(m.group(1)), int(m.group(2))) if m else None
    if runner == "moon":
        m = re.search(r"Tasks:\s+(\d+) completed(?: \((\d+) cached\))?", text)
        return (int(m.group(2) or 0), int(m.group(1))) if m else None
    return None


# --- One size ----------------------------------------------------------------------------------

class SizeBench:
    def __init__(self, n: int, args: argparse.Namespace, tools: Tools, env: dict) -> None:
        self.n = n
        self.args = args
        self.tools = tools
        self.env = env
        self.root = args.out / f"compare-{n}"
        self.logs = self.root / "logs"
        self.copies = {r: self.root / r for r in (*RUNNERS, "floor")}
        self.stash = self.root / "stash"
        self.records: list[dict] = []
        self.edit_counter = 0
        self.task_floor: dict = {}

    # Setup --------------------------------------------------------------------------------

    def setup(self) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)
        self.logs.mkdir(parents=True)
        generated = self.root / "generated"
        log(f"N={self.n}: generating the workspace")
        quiet([sys.executable, str(BENCH / "generate.py"), "--projects", str(self.n),
               "--out", str(generated), "--seed", str(self.args.seed)], REPO)
        self.commit = quiet(["git", "rev-parse", "HEAD"], generated).strip()
        for name, copy in self.copies.items():
            quiet(["git", "clone", "--quiet", str(generated), str(copy)], self.root, self.env)
            if name in ("turbo", "nx"):
                # Nx must find its package from the workspace; a real directory with links (not
                # one link to bench/node_modules) keeps any node_modules/.cache per copy.
                (copy / "node_modules").mkdir()
                for pkg in ("nx", "turbo"):
                    (copy / "node_modules" / pkg).symlink_to(NODE_MODULES / pkg)
        shutil.rmtree(generated)
        # Fresh git indexes newer than every file, so no entry is racily clean for anyone.
        time.sleep(1.1)
        for copy in self.copies.values():
            quiet(["git", "update-index", "-q", "--refresh"], copy, self.env)
        self.ws = Workspace(self.copies["vx"])
        if len(self.ws.projects) != self.n:
            raise BenchError(f"expected {self.n} projects, found {len(self.ws.projects)}")
        self.originals = {p: (self.copies["vx"] / self.ws.dir[p] / EDITED_FILE).read_bytes()
                          for p in (self.ws.leaf, self.ws.core)}
        log(f"N={self.n}: {len(self.ws.edges)} edges; leaf {self.ws.leaf}; core {self.ws.core} "
            f"({len(self.ws.closure(self.ws.core))} transitive dependants)")

    def check_graphs(self) -> None:
        """turbo's and Nx's view of the build edges must equal the package.json edges (and
        vx's). Also the first start of each tool (binaries and workspace into the page cache)."""
        expected = self.ws.edges
        views: dict[str, set] = {}
        out = quiet(self.tools.argv("vx", self.copies["vx"], 1)[:4] + ["build", "--all", "--dry=json"],
                    self.copies["vx"], self.env)
        views["vx"] = {(t["project"], d.split("#")[0]) for t in json.loads(out)["tasks"]
                       if t["task"] == "build" for d in t["deps"]}
        out = quiet([str(self.tools.turbo), "run", "build", "--dry=json"], self.copies["turbo"], self.env)
        views["turbo"] = {(t["package"], d.split("#")[0]) for t in json.loads(out)["tasks"]
                          if t["task"] == "build" for d in t["dependencies"]}
        graph_file = self.logs / "nx-graph.json"
        quiet([self.tools.node, str(self.tools.nx), "graph", f"--file={graph_file}"],
              self.copies["nx"], self.env_for("nx"))
        graph = json.loads(graph_file.read_text())["graph"]
        views["nx"] = {(e["source"], e["target"]) for deps in graph["dependencies"].values()
                       for e in deps if e["target"] in self.ws.dir}
        # moon names projects by folder; its task graph's edges go from a task to its dependency.
        by_folder = {Path(d).name: name for name, d in self.ws.dir.items()}
        out = quiet([str(self.tools.moon), "task-graph", "--json"], self.copies["moon"], self.env)
        tasks = json.loads(out)
        target = {int(i): t["target"] for i, t in tasks["data"].items()}
        views["moon"] = set()
        for a, b, *_ in tasks["graph"]["edges"]:
            (pa, ta), (pb, tb) = target[a].split(":"), target[b].split(":")
            if ta == tb == "build" and pa != pb:
                views["moon"].add((by_folder[pa], by_folder[pb]))
        for tool, edges in views.items():
            if edges != expected:
                missing, extra = sorted(expected - edges)[:5], sorted(edges - expected)[:5]
                raise BenchError(f"{tool}'s build graph differs from the package.json edges: "
                                 f"missing {missing}, extra {extra}")
        log(f"N={self.n}: vx, turbo, nx and moon all see the {len(expected)} edges")

    def measure_tasks(self) -> None:
        """Per-task durations of the bare commands (`sh -c SCRIPT` in the project directory),
        median of --floor-samples rounds, for the list-schedule floor. Leaves dist/ built in the
        floor copy and stashes every dist/ for the restore floor."""
        copy = self.copies["floor"]
        samples = self.args.floor_samples
        walls: dict[str, list[float]] = {}
        cpus: dict[str, list[float]] = {}
        log(f"N={self.n}: timing the bare task commands ({samples} rounds of {len(TASKS) * self.n})")
        env = {k: v for k, v in self.env.items() if k != "VX_LOG"}
        for _ in range(samples):
            for p in self.ws.projects:
                pdir = copy / self.ws.dir[p]
                shutil.rmtree(pdir / "dist", ignore_errors=True)
                for task in TASKS:
                    started = time.perf_counter()
                    proc = subprocess.Popen(["sh", "-c", self.ws.scripts[p][task]], cwd=pdir, env=env,
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
                    _, status, usage = os.wait4(proc.pid, 0)
                    wall = time.perf_counter() - started
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    if proc.returncode != 0:
                        raise BenchError(f"`{self.ws.scripts[p][task]}` failed in {pdir}")
                    walls.setdefault(f"{p}#{task}", []).append(wall)
                    cpus.setdefault(f"{p}#{task}", []).append(usage.ru_utime + usage.ru_stime)
        self.durations = {t: statistics.median(v) for t, v in walls.items()}
        self.task_cpu = {t: statistics.median(v) for t, v in cpus.items()}
        self.check_outputs("floor")
        # The stash: a copy of every dist/ for the restore floor.
        for p in self.ws.projects:
            shutil.copytree(copy / self.ws.dir[p] / "dist", self.stash / self.ws.dir[p] / "dist",
                            symlinks=True)
        for scenario in ("cold", "leaf", "core"):
            tasks = self.ws.executed_tasks(scenario)
            schedule = list_schedule(self.ws, tasks, self.durations, self.args.concurrency)
            schedule["cpu"] = sum(self.task_cpu[t] for t in tasks)
            self.task_floor[scenario] = schedule
        cold = self.task_floor["cold"]
        log(f"N={self.n}: median task {fmt_time(statistics.median(self.durations.values()))}; "
            f"cold floor {fmt_time(cold['makespan'])} (work {fmt_time(cold['work'])}, critical path "
            f"{fmt_time(cold['critical_path'])})")

    # State --------------------------------------------------------------------------------

    def wipe(self, runner: str, caches: bool) -> None:
        """Delete every dist/ (and with caches, every cache and turbo's per-package logs)."""
        copy = self.copies[runner]
        for p in self.ws.projects:
            pdir = copy / self.ws.dir[p]
            shutil.rmtree(pdir / "dist", ignore_errors=True)
            if caches:
                shutil.rmtree(pdir / ".turbo", ignore_errors=True)
        if caches:
            for cache in (".vx", ".turbo", ".nx", ".moon/cache", "node_modules/.cache"):
                shutil.rmtree(copy / cache, ignore_errors=True)

    def edit(self, runner: str, project: str) -> bytes:
        """New content, never seen before by any cache, for the project's edited file."""
        self.edit_counter += 1
        content = self.originals[project] + f"edit {self.edit_counter}\n".encode()
        (self.copies[runner] / self.ws.dir[project] / EDITED_FILE).write_bytes(content)
        return content

    def unedit(self) -> None:
        for copy in self.copies.values():
            for project, content in self.originals.items():
                (copy / self.ws.dir[project] / EDITED_FILE).write_bytes(content)

    def check_outputs(self, runner: str) -> None:
        copy = self.copies[runner]
        missing = [p for p in self.ws.projects
                   if not (copy / self.ws.dir[p] / "dist" / "index.txt").is_file()]
        if missing:
            raise BenchError(f"{runner}: {len(missing)} projects have no dist/index.txt after the "
                             f"run (first: {missing[0]}); see {self.logs}")

    # Runs ---------------------------------------------------------------------------------

    def prepare(self, scenario: str, runner: str) -> bytes | None:
        if scenario == "cold":
            self.wipe(runner, caches=True)
        elif scenario == "restore":
            self.wipe(runner, caches=False)
        elif scenario == "leaf":
            return self.edit(runner, self.ws.leaf)
        elif scenario == "core":
            return self.edit(runner, self.ws.core)
        return None

    def env_for(self, runner: str) -> dict:
        """turbo gets bench/npm-shim first on PATH (unless --turbo-npm): its tasks then run
        their scripts with `sh -c`, like vx's and Nx's, instead of through `npm run`. Nx gets a
        16 GiB V8 heap: at 5,000 projects its cold run dies at Node's default (about 4 GiB)."""
        if runner == "nx":
            return {**self.env, "NODE_OPTIONS": f"--max-old-space-size={NX_HEAP_MIB}"}
        if runner != "turbo" or self.args.turbo_npm:
            return self.env
        return {**self.env, "PATH": f"{BENCH / 'npm-shim'}:{self.env.get('PATH', '')}"}

    def run_tool(self, scenario: str, runner: str, label: str) -> dict:
        copy = self.copies[runner]
        out = self.logs / f"{runner}.out"
        err = self.logs / f"{runner}.err"
        env = self.env_for(runner)
        if scenario == "whole":
            env = {**env, "VX_SNAPSHOT": "0"}
        result = run_measured(self.tools.argv(runner, copy, self.args.concurrency), copy,
                              env, out, err, self.args.timeout)
        stdout = out.read_text(errors="replace")
        stderr = err.read_text(errors="replace")
        if result["exit"] != 0:
            keep = self.logs / f"failed-{runner}-{scenario}.log"
            keep.write_text(stdout + "\n--- stderr ---\n" + stderr)
            raise BenchError(f"{runner} failed ({label}, exit {result['exit']}); output in {keep}:\n"
                             f"{(stdout + stderr).strip()[-2000:]}")
        if result["killed_leftovers"]:
            log(f"warning: {runner} left processes running 5 s after the run ({label}); killed them")
        counts = cached_count(runner, stdout + "\n" + stderr)
        result["cached"], result["counted"] = counts if counts else (None, None)
        if runner == "vx":
            result["counters"] = parse_counters(stderr)
        return result

    def verify(self, scenario: str, runner: str, result: dict, content: bytes | None, label: str) -> None:
        """The work really happened: outputs present, new content built, expected cache hits."""
        if scenario in ("cold", "restore"):
            self.check_outputs(runner)
        if scenario == "cold" and runner == "nx" and not (self.copies["nx"] / ".nx" / "cache").is_dir():
            raise BenchError("nx kept no cache in its copy's .nx/cache: is `cacheDirectory` missing "
                             "from nx.json? (Nx 24 otherwise shares a per-user cache between copies)")
        if content is not None:
            project = self.ws.leaf if scenario == "leaf" else self.ws.core
            built = self.copies[runner] / self.ws.dir[project] / "dist" / Path(EDITED_FILE).name
            if built.read_bytes() != content:
                raise BenchError(f"{runner} ({label}): {built} does not hold the edited content")
        if result["cached"] is None:
            raise BenchError(f"{runner} ({label}): no cache summary found in its output; see {self.logs}")
        # Nx and moon count their no-op `check` tasks too.
        counted = (len(TASKS) + 1 if runner in ("nx", "moon") else len(TASKS)) * self.n
        if result["counted"] != counted:
            raise BenchError(f"{runner} ({label}): ran {result['counted']} tasks, expected {counted}; "
                             f"see {self.logs}")
        expected = len(TASKS) * self.n - self.ws.executed(scenario)
        if runner == "moon":
            # moon caches a no-op `check` too, except where one of its three tasks re-ran.
            expected += self.n - len(self.ws.affected(scenario))
        if result["cached"] != expected:
            raise BenchError(f"{runner} ({label}): {result['cached']} tasks from the cache, expected "
                             f"{expected} (of {len(TASKS) * self.n}); see {self.logs}")

    def run_floor(self, scenario: str) -> dict:
        """The measured part of a floor, on the floor copy (prepared like the others)."""
        copy = self.copies["floor"]
        status = "git status --porcelain -uall >/dev/null"
        if scenario == "restore":
            command = f"{status} && cp -a '{self.stash}/packages/.' packages/"
        else:
            command = status
        result = run_measured(["sh", "-c", command], copy, self.env, self.logs / "floor.out",
                              self.logs / "floor.err", self.args.timeout)
        if result["exit"] != 0:
            raise BenchError(f"floor `{command}` failed: {(self.logs / 'floor.err').read_text()[-2000:]}")
        if scenario == "restore":
            self.check_outputs("floor")
        if scenario in self.task_floor:  # edits: git status + the ideal schedule of the re-runs
            result["measured_wall"] = result["wall"]
            result["wall"] += self.task_floor[scenario]["makespan"]
            result["cpu"] += self.task_floor[scenario]["cpu"]
        return result

    def one_round(self, scenario: str, rep: int | None, total: int, active: list[str]) -> None:
        label = f"{scenario} {'warm-up' if rep is None else f'{rep + 1}/{total}'}"
        for runner in (*active, "floor"):
            if runner == "floor" and scenario == "cold":
                continue  # the cold floor is computed (list schedule), not run
            content = self.prepare(scenario, runner)
            if runner == "floor":
                result = self.run_floor(scenario)
            else:
                result = self.run_tool(scenario, runner, label)
                self.verify(scenario, runner, result, content, label)
            extra = ""
            if runner == "vx" and result.get("counters"):
                c = result["counters"]
                extra = " " + " ".join(f"{k}={v}" for k, v in c.items())
            if result.get("orphans"):
                extra += f" (+{result['orphans']} orphans, cpu {fmt_time(result['orphan_cpu'])})"
            log(f"N={self.n} {label:<16} {runner:<5} {fmt_time(result['wall']):>9}  "
                f"cpu {fmt_time(result['cpu']):>9}  rss {fmt_mib(result['maxrss_kib']):>9}{extra}")
            if rep is not None:
                self.records.append({"n": self.n, "scenario": scenario, "runner": runner,
                                     "rep": rep, **result})

    def active(self, scenario: str) -> list[str]:
        """The runners not skipped (--skip) in this scenario at this size; `whole` is vx's alone
        (the peers' runs would be those of `nothing` again)."""
        runners = ("vx",) if scenario == "whole" else RUNNERS
        return [r for r in runners if not skipped(self.args.skip, r, scenario, self.n)]

    def run(self) -> None:
        self.setup()
        self.check_graphs()
        self.measure_tasks()
        primed = {r: False for r in RUNNERS}
        for scenario in self.args.scenarios:
            if scenario == "cold":
                runs = self.args.runs_cold
            elif scenario == "core":
                runs = self.args.runs_core
            else:
                runs = self.args.runs
            active = self.active(scenario)
            if scenario != "cold":
                # Every cache full and every output present, whatever came before (for a runner
                # skipped in the cold scenario, this is a full build).
                self.unedit()
                for runner in active:
                    if not primed[runner]:
                        result = self.run_tool(scenario, runner, "prime")
                        self.check_outputs(runner)
                        primed[runner] = True
                        log(f"N={self.n} {scenario + ' prime':<16} {runner:<5} {fmt_time(result['wall']):>9}")
                if scenario == "nothing":
                    # vx writes a run snapshot only when nothing it records changed in the 2 s
                    # before the run started (the racy-file rule), and `unedit` just rewrote
                    # files: the warm-up that writes it comes after that, as a developer's second
                    # run after an edit would.
                    time.sleep(2.2)
                if scenario != "core":
                    # Warm-up, untimed. The core edit needs none beyond the priming: it starts
                    # from the same state every time, and a round costs almost a cold run.
                    self.one_round(scenario, None, runs, active)
            for rep in range(runs):
                self.one_round(scenario, rep, runs, active)
            if scenario == "cold":
                for runner in active:
                    primed[runner] = True  # it just built everything
            if scenario in ("leaf", "core"):
                self.unedit()
                primed = {r: False for r in RUNNERS}  # re-prime from the committed content
        if self.args.clean:
            for copy in (*self.copies.values(), self.stash):
                shutil.rmtree(copy, ignore_errors=True)

    # Report -------------------------------------------------------------------------------

    def summary(self) -> dict:
        """Medians per scenario and runner."""
        out: dict = {}
        for scenario in self.args.scenarios:
            row: dict = {}
            for runner in (*RUNNERS, "floor"):
                recs = [r for r in self.records if r["scenario"] == scenario and r["runner"] == runner]
                if runner == "floor" and scenario == "cold":
                    f = self.task_floor["cold"]
                    row[runner] = {"wall": f["makespan"], "cpu": f["cpu"], "maxrss_kib": None, "runs": 0}
                    continue
                if not recs:
                    continue
                entry = {
                    "runs": len(recs),
                    "wall": median([r["wall"] for r in recs]),
                    "wall_min": min(r["wall"] for r in recs),
                    "wall_max": max(r["wall"] for r in recs),
                    "cpu": median([r["cpu"] for r in recs]),
                    "maxrss_kib": median([r["maxrss_kib"] for r in recs]),
                }
                if runner == "vx":
                    def counter(key: str) -> list:
                        return [r.get("counters", {}).get(key) for r in recs]
                    user, sys_ = counter("cpu_user_ms"), counter("cpu_sys_ms")
                    own = [u + s for u, s in zip(user, sys_) if u is not None and s is not None]
                    entry["self_cpu"] = median(own) / 1000 if own else None
                    entry["self_maxrss_kib"] = median(counter("max_rss_kib"))
                row[runner] = entry
            out[scenario] = row
        return out

    def markdown(self) -> str:
        summary = self.summary()
        tasks = len(TASKS) * self.n

        def get(scenario: str, runner: str, key: str) -> float | None:
            return summary[scenario].get(runner, {}).get(key)

        def cell(scenario: str, runner: str, key: str, fmt) -> str:
            if runner in RUNNERS and skipped(self.args.skip, runner, scenario, self.n):
                return "skipped"
            return fmt(get(scenario, runner, key))

        lines = [
            f"### {self.n:,} projects",
            "",
            f"{tasks:,} tasks (`build` + `test` + `lint` per project, `check` groups them), "
            f"{len(self.ws.edges):,} project edges; concurrency {self.args.concurrency}; "
            f"leaf `{self.ws.leaf}` ({self.ws.executed('leaf')} tasks re-run), core `{self.ws.core}` "
            f"({self.ws.executed('core'):,} tasks re-run). Workspace commit `{self.commit[:12]}`.",
            "",
            "Wall time (median; timed runs per runner in brackets):",
            "",
            "| scenario | vx | turbo | nx | moon | floor | vx/turbo | vx/nx | vx/moon | vx/floor |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        floor_note = {"cold": "schedule", "nothing": "git status", "whole": "git status", "restore": "status + cp",
                      "leaf": "status + schedule", "core": "status + schedule"}
        for scenario in summary:
            runs = max((e.get("runs", 0) for r, e in summary[scenario].items() if r in RUNNERS), default=0)
            floor = get(scenario, "floor", "wall")
            vx = get(scenario, "vx", "wall")
            lines.append(
                f"| {TITLES[scenario]} [{runs}] | {cell(scenario, 'vx', 'wall', fmt_time)} | "
                f"{cell(scenario, 'turbo', 'wall', fmt_time)} | {cell(scenario, 'nx', 'wall', fmt_time)} | "
                f"{cell(scenario, 'moon', 'wall', fmt_time)} | "
                f"{fmt_time(floor)}{' (' + floor_note[scenario] + ')' if floor is not None else ''} | "
                f"{fmt_ratio(vx, get(scenario, 'turbo', 'wall'))} | {fmt_ratio(vx, get(scenario, 'nx', 'wall'))} | "
                f"{fmt_ratio(vx, get(scenario, 'moon', 'wall'))} | {fmt_ratio(vx, floor)} |")
        lines += [
            "",
            "CPU time, user + sys (median). Tool columns: the whole process tree (os.wait4 and "
            "adopted orphans), task commands included; `vx self`: vx's own process (its counters "
            "line). Floor: the floor's commands (for the schedules, the sum of the bare tasks' CPU).",
            "",
            "| scenario | vx | vx self | turbo | nx | moon | floor |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for scenario in summary:
            lines.append(
                f"| {TITLES[scenario]} | {cell(scenario, 'vx', 'cpu', fmt_time)} | "
                f"{cell(scenario, 'vx', 'self_cpu', fmt_time)} | {cell(scenario, 'turbo', 'cpu', fmt_time)} | "
                f"{cell(scenario, 'nx', 'cpu', fmt_time)} | {cell(scenario, 'moon', 'cpu', fmt_time)} | "
                f"{fmt_time(get(scenario, 'floor', 'cpu'))} |")
        lines += [
            "",
            "Peak RSS (median of the runs' peaks). Tool columns: the largest single process of the "
            "tree (ru_maxrss of wait4); `vx self`: vx's own process.",
            "",
            "| scenario | vx | vx self | turbo | nx | moon |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for scenario in summary:
            lines.append(
                f"| {TITLES[scenario]} | {cell(scenario, 'vx', 'maxrss_kib', fmt_mib)} | "
                f"{cell(scenario, 'vx', 'self_maxrss_kib', fmt_mib)} | "
                f"{cell(scenario, 'turbo', 'maxrss_kib', fmt_mib)} | {cell(scenario, 'nx', 'maxrss_kib', fmt_mib)} | "
                f"{cell(scenario, 'moon', 'maxrss_kib', fmt_mib)} |")
        lines.append("")
        return "\n".join(lines)


# --- Main --------------------------------------------------------------------------------------

def memory_gib(meminfo: str) -> str:
    try:
        return f"{int(meminfo.split()[0]) / 2**20:.1f} GiB"
    except (ValueError, IndexError):
        return meminfo


def machine(tools: Tools, env: dict) -> dict:
    def first(path: str, key: str) -> str:
        try:
            for line in Path(path).read_text().splitlines():
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "?"

    def version(argv: list[str]) -> str:
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=env).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"

    disk = shutil.disk_usage(BENCH)
    return {
        "nproc": os.cpu_count(),
        "cpu": first("/proc/cpuinfo", "model name"),
        "memory": memory_gib(first("/proc/meminfo", "MemTotal")),
        "disk_free_gib": round(disk.free / 2**30, 1),
        "kernel": platform.release(),
        "loadavg_start": os.getloadavg(),
        "vx": version([str(tools.vx), "--version"]),
        "turbo": package_version("turbo"),
        "nx": package_version("nx"),
        "moon": version([str(tools.moon), "--version"]).removeprefix("moon "),
        "node": version([tools.node, "--version"]),
        "npm": version(["npm", "--version"]),
        "git": version(["git", "--version"]),
        "python": platform.python_version(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100,1000,5000", help="project counts (default 100,1000,5000)")
    ap.add_argument("--runs", default="5,5000=3", metavar="SPEC",
                    help="timed runs of the nothing/restore/leaf scenarios: N or N,SIZE=N,... "
                         "(default 5,5000=3)")
    ap.add_argument("--runs-cold", default="3,5000=1", metavar="SPEC",
                    help="timed runs of the cold scenario (default 3,5000=1)")
    ap.add_argument("--runs-core", default=None, metavar="SPEC",
                    help="timed runs of the core-edit scenario (default: as --runs-cold)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help=f"comma-separated subset of {','.join(SCENARIOS)} (run in that order)")
    ap.add_argument("--skip", default="", metavar="LIST",
                    help="runs to leave out: RUNNER[:SCENARIO][@SIZE],... e.g. turbo@5000 "
                         "(default none; bench/run.sh passes turbo@5000)")
    ap.add_argument("--concurrency", type=int, default=2, help="tasks at once, for every tool (default 2)")
    ap.add_argument("--turbo-npm", action="store_true",
                    help="let turbo run tasks through the real `npm run` (default: bench/npm-shim runs "
                         "the script with sh -c, as vx and Nx do)")
    ap.add_argument("--floor-samples", type=int, default=3, help="rounds of bare-task timings (default 3)")
    ap.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per run (default 14400)")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    ap.add_argument("--out", type=Path, default=BENCH / "out", help="work and result directory (default bench/out)")
    ap.add_argument("--clean", action="store_true", help="delete each size's copies once measured")
    args = ap.parse_args()

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    runs, runs_cold = per_size(args.runs, "--runs"), per_size(args.runs_cold, "--runs-cold")
    runs_core = per_size(args.runs_core, "--runs-core") if args.runs_core else runs_cold
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    for s in scenarios:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario `{s}` (known: {', '.join(SCENARIOS)})")
    args.scenarios = [s for s in SCENARIOS if s in scenarios]
    args.skip = parse_skip(args.skip)
    if args.concurrency < 1 or args.floor_samples < 1:
        ap.error("--concurrency and --floor-samples must be at least 1")

    vx_source = Path(os.environ.get("VX", REPO / "target" / "release" / "vx"))
    if not vx_source.is_file():
        ap.error(f"no vx binary at {vx_source} (cargo build --release, or set VX=path/to/vx)")
    node = shutil.which("node")
    if not node:
        ap.error("node is not on PATH")
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    # One copy of the binary for the whole run: the source may be rebuilt meanwhile.
    vx = args.out / "compare-bin" / "vx"
    vx.parent.mkdir(exist_ok=True)
    shutil.copy2(vx_source, vx)

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TURBO_", "NX_", "MOON_", "VX_", "GIT_")) and k not in ("FORCE_COLOR",)}
    env.update(RUN_ENV)
    try:
        tools = Tools(vx, node)
    except BenchError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    subreaper = become_subreaper()
    if not subreaper:
        log("warning: cannot become a child subreaper: CPU of processes a tool orphans is not counted")
    info = machine(tools, env)
    info["subreaper"] = subreaper
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    md_path = args.out / f"results-{stamp}.md"
    json_path = args.out / f"results-{stamp}.json"
    log(f"vx {info['vx']} ({vx_source}), turbo {info['turbo']}, nx {info['nx']}, moon {info['moon']}, "
        f"node {info['node']}; "
        f"results in {md_path}")
    header = [
        f"## Results {stamp}",
        "",
        f"Machine: {info['nproc']} CPUs ({info['cpu']}), {info['memory']} memory, kernel "
        f"{info['kernel']}, load average at start {', '.join(f'{x:.2f}' for x in info['loadavg_start'])}. "
        f"Tools: {info['vx']}, turbo {info['turbo']}, nx {info['nx']}, moon {info['moon']}, node {info['node']}, "
        f"npm {info['npm']}, {info['git']}, Python {info['python']}.",
        "",
        f"Command: `{' '.join(['python3', 'bench/compare.py', *sys.argv[1:]])}`",
        "",
        ("turbo's tasks ran through the real `npm run` (--turbo-npm)." if args.turbo_npm else
         "turbo's tasks ran their scripts with `sh -c` through bench/npm-shim, like vx's and Nx's "
         "(not through `npm run`; see docs/benchmarks.md)."),
        "",
    ]
    md_path.write_text("\n".join(header))
    print("\n".join(header), flush=True)
    document: dict = {"machine": info, "args": {k: str(v) for k, v in vars(args).items()},
                      "sizes": {}}
    sections = []
    started = time.monotonic()
    for n in sizes:
        args.runs, args.runs_cold, args.runs_core = (
            d.get(n, d[None]) for d in (runs, runs_cold, runs_core))
        bench = SizeBench(n, args, tools, env)
        t0 = time.monotonic()
        try:
            bench.run()
        except BenchError as e:
            print(f"\ncompare.py: N={n}: {e}", file=sys.stderr)
            json_path.write_text(json.dumps(document, indent=1))
            return 1
        elapsed = time.monotonic() - t0
        log(f"N={n}: done in {elapsed / 60:.1f} min")
        section = bench.markdown()
        sections.append(section)
        print(section, flush=True)
        with md_path.open("a") as f:
            f.write("\n" + section)
        document["sizes"][str(n)] = {
            "commit": bench.commit, "edges": len(bench.ws.edges), "leaf": bench.ws.leaf,
            "core": bench.ws.core, "core_dependants": len(bench.ws.closure(bench.ws.core)),
            "elapsed_s": elapsed, "runs": args.runs, "runs_cold": args.runs_cold,
            "runs_core": args.runs_core, "task_floor": bench.task_floor,
            "summary": bench.summary(), "records": bench.records,
        }
        document["machine"]["loadavg_end"] = os.getloadavg()
        json_path.write_text(json.dumps(document, indent=1))
    log(f"all sizes done in {(time.monotonic() - started) / 60:.1f} min; {md_path}, {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
