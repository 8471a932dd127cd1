#!/usr/bin/env python3
"""Generate a synthetic monorepo for benchmarking vx, Turborepo and Nx side by side.

    python3 bench/generate.py --projects 1000 --out bench/out/ws-1000 [--seed 1]

The output is ONE committed git repository: an npm-workspaces monorepo of N projects under
`packages/`, named `@bench/p0001` … `@bench/pNNNN`. Same arguments, same bytes, same commit id:
the shape comes from a small seeded PRNG (SplitMix64, so it does not depend on the Python
version), and the commit uses a fixed author, committer and date.

Shape: a layered DAG. Projects are cut, in order, into layers of `--layer-width` projects
(default ceil(sqrt(N)), so about sqrt(N) layers: 1000 projects -> 32 layers of 32).
Layer 0 has no dependencies. Every project of layer k > 0 depends on 1 to `--max-deps`
(default 4) distinct projects of layer k-1, and, with probability `--skip-chance`
(default 0.2), on one more project of any layer below k-1. The edges are
`"dependencies": {"@bench/p0007": "workspace:*"}` in package.json, so the DAG has real fan-in
(each project of a layer has ~2.5 dependants in the next one on average) and long edges.
Every project has `src/index.txt` plus 1 to 3 more source files (`src/a.txt`, `src/b.txt`, ...).

Per project, `vx.toml` declares:
  build  mkdir -p dist && cp src/* dist/        depends-on ^build   cached: inputs src/**, outputs dist/**
  test   test -f dist/index.txt                 depends-on build    cached: inputs src/**, outputs []
  lint   grep -q . src/index.txt                no dependencies     cached: inputs src/**, outputs []
  check  group: build + test + lint
(three cached tasks per project, as PERF-1 asks).

Run time and memory are linear in N (each project draws a bounded number of edges; files are
written once; one `git add` and one `git commit` for the whole tree).

Other tools: `--tools` names the configuration flavours to write (default all four:
vx,turbo,nx,moon). They all go into the SAME tree and the same commit, so that each tool does the
same work on the same files:
  vx     root vx.toml ([workspace]) and one vx.toml per project (above).
  turbo  root turbo.json (build: dependsOn ^build, inputs src/**, outputs dist/**; test: dependsOn
         build, inputs src/**, outputs []; lint: inputs src/**, outputs []; check: dependsOn build
         + test + lint, no script), package.json "scripts" {build, test, lint} with the same shell
         commands, the root "packageManager" field
         (npm) and a hand-written package-lock.json (v3) listing the workspace packages, so that
         turbo resolves the `workspace:*` edges without any package manager install. With
         `--package-manager pnpm`: pnpm-workspace.yaml and a hand-written pnpm-lock.yaml (v9)
         instead, and Nx's lockfile analysis off (Nx refuses a pnpm lockfile without an install).
  nx     root nx.json: targetDefaults give build, test and lint the `nx:run-commands` executor
         with the same shell commands (cwd = the project), cache, outputs and dependsOn; inputs
         of build and test are the named input `src` ({projectRoot}/src/**/*) plus `^src` (the
         same files of every dependency, recursively), which mirrors vx folding upstream keys and
         turbo folding dependency hashes; lint's are `src` alone (it depends on nothing); check
         is `nx:noop` depending on build + test + lint; cacheDirectory
         `.nx/cache` keeps the cache in the checkout (Nx 24 otherwise shares one per-user
         cache between all checkouts of a repository). Each package.json
         gets `"nx": {"includedScripts": [], "targets": {"build": {}, "test": {}, "lint": {},
         "check": {}}}`
         so that Nx does not also infer targets from the turbo scripts (which would run them
         through `npm run`). Analytics, Nx Cloud, the daemon and the TUI are off in nx.json.
  moon   .moon/workspace.yml (projects packages/*, git, telemetry off), .moon/tasks/all.yml
         (inherited by every project: build, test and lint as `script`s with the same shell
         commands, inputs src/**/*, build's output the folder `dist`, deps ^:build / ~:build;
         check depends on the three) and a moon.yml per project whose `dependsOn` lists its
         dependencies (moon reads no package.json edges without its JavaScript toolchain, and
         `^:build` would then depend on nothing). `.moon/cache/` is git-ignored.
`--cutoff` (bench/cutoff.py): each build writes its sources without their `#` comment lines
(`sed /^#/d src/* > dist/index.txt`), so a comment edit leaves its outputs as they were; turbo's
build gets the opt-in `dependencyOutputs` input and moon's `^:build` edges `cacheStrategy:
outputs`, the peers' forms of vx's default early cutoff.
Nx finds its own package through the workspace's `node_modules` (git-ignored), which the
benchmark harness (bench/compare.py) links to bench/node_modules.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

# Fixed identity and date so that the commit id depends only on the generated tree.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "vx bench",
    "GIT_AUTHOR_EMAIL": "bench@vx.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "vx bench",
    "GIT_COMMITTER_EMAIL": "bench@vx.invalid",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000",
    # Ignore the user's and the system's git configuration (signing, hooks, templates, ...).
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

SOURCE_LETTERS = "abc"


class SplitMix64:
    """Tiny deterministic PRNG (Steele, Lea and Flood's SplitMix64); stable across Pythons."""

    MASK = (1 << 64) - 1

    def __init__(self, seed: int) -> None:
        self.state = seed & self.MASK

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Uniform integer in [0, n) (modulo bias is irrelevant at these sizes)."""
        return self.next_u64() % n

    def chance(self, p: float) -> bool:
        return (self.next_u64() >> 11) * (1.0 / (1 << 53)) < p

    def sample(self, population: range, k: int) -> list[int]:
        """k distinct elements of a range, in O(k) (rejection; k is small here)."""
        chosen: list[int] = []
        seen: set[int] = set()
        while len(chosen) < k:
            x = population[self.below(len(population))]
            if x not in seen:
                seen.add(x)
                chosen.append(x)
        return chosen


class Project:
    __slots__ = ("index", "layer", "deps", "sources")

    def __init__(self, index: int, layer: int) -> None:
        self.index = index  # 0-based; names are 1-based
        self.layer = layer
        self.deps: list[int] = []
        self.sources = 0  # number of extra source files besides index.txt


def plan(n: int, width: int, max_deps: int, skip_chance: float, seed: int) -> list[Project]:
    """Lay out the DAG: projects, layers, and dependency edges (indices of lower layers)."""
    rng = SplitMix64(seed)
    projects = [Project(i, i // width) for i in range(n)]
    for p in projects:
        p.sources = 1 + rng.below(len(SOURCE_LETTERS))
        if p.layer == 0:
            continue
        below = range((p.layer - 1) * width, p.layer * width)  # the full layer just below
        k = 1 + rng.below(min(max_deps, len(below)))
        deps = set(rng.sample(below, k))
        if p.layer >= 2 and rng.chance(skip_chance):
            deps.add(rng.below((p.layer - 1) * width))  # anything below the previous layer
        p.deps = sorted(deps)
    return projects


def name_of(index: int, pad: int) -> str:
    return f"p{index + 1:0{pad}d}"


def write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", newline="\n")


def write_root_files(out: Path, n: int, args: argparse.Namespace, edges: int, layers: int,
                     flavours: list[str]) -> None:
    package = {
        "name": f"bench-ws-{n}",
        "private": True,
        "workspaces": ["packages/*"],
    }
    for flavour in flavours:
        if FLAVOURS[flavour].root_package:
            FLAVOURS[flavour].root_package(package)
    write(out / "package.json", json.dumps(package, indent=2) + "\n")
    # `node_modules` without a slash: the harness makes it a symlink in some copies, and a
    # pattern ending in `/` only matches directories.
    write(out / ".gitignore", "dist/\n.vx/\n.turbo/\n.nx/\n.moon/cache/\nnode_modules\n")
    write(out / "README.md", (
        f"# Generated benchmark workspace ({n} projects)\n\n"
        f"Written by `bench/generate.py --projects {n} --seed {args.seed} "
        f"--layer-width {args.layer_width} --max-deps {args.max_deps} "
        f"--skip-chance {args.skip_chance} --tools {','.join(flavours)} "
        f"--package-manager {args.package_manager}{' --cutoff' if args.cutoff else ''}`.\n"
        f"{layers} layers, {edges} project edges. Do not edit; regenerate instead.\n"
    ))


# The shell commands, shared by every flavour so that the tools run exactly the same work.
BUILD_COMMAND = "mkdir -p dist && cp src/* dist/"
# With --cutoff: the build drops `#` comment lines, so a comment edit writes the same dist/.
CUTOFF_BUILD_COMMAND = "mkdir -p dist && sed /^#/d src/* > dist/index.txt"
TEST_COMMAND = "test -f dist/index.txt"
LINT_COMMAND = "grep -q . src/index.txt"


def build_command() -> str:
    return CUTOFF_BUILD_COMMAND if OPTIONS["cutoff"] else BUILD_COMMAND
# turbo reads the package manager from the root package.json and runs each script through it
# (`npm run <script>`, or `pnpm run <script>`). No install is needed: the lockfile is written by
# hand. npm is the default (it comes with Node). Note that `npm run` maps every workspace
# package on each call, so its cost per task grows with N; `pnpm run` costs the same at any N
# but more at 100-1,000 projects on the dev machine, and the harness does not install pnpm.
PACKAGE_MANAGERS = {"npm": "npm@11.19.1", "pnpm": "pnpm@10.34.9"}
OPTIONS = {"package_manager": "npm", "cutoff": False}  # set from the flags


def package_name(index: int, pad: int) -> str:
    return f"@bench/{name_of(index, pad)}"


# --- vx ----------------------------------------------------------------------------------------

def write_vx_root(out: Path, projects: list[Project], pad: int, n: int) -> None:
    write(out / "vx.toml", '[workspace]\nmembers = ["packages/*"]\n')


def write_vx_project(pdir: Path, project: Project, pad: int) -> None:
    write(pdir / "vx.toml", (
        "[tasks.build]\n"
        f'command = "{build_command()}"\n'
        'depends-on = ["^build"]\n'
        'cache = { inputs = ["src/**"], outputs = ["dist/**"] }\n'
        "\n"
        "[tasks.test]\n"
        f'command = "{TEST_COMMAND}"\n'
        'depends-on = ["build"]\n'
        'cache = { inputs = ["src/**"], outputs = [] }\n'
        "\n"
        "[tasks.lint]\n"
        f'command = "{LINT_COMMAND}"\n'
        'cache = { inputs = ["src/**"], outputs = [] }\n'
        "\n"
        "[tasks.check]\n"
        'depends-on = ["build", "test", "lint"]\n'
    ))


# --- Turborepo ---------------------------------------------------------------------------------

def turbo_root_package(package: dict) -> None:
    package["packageManager"] = PACKAGE_MANAGERS[OPTIONS["package_manager"]]


def write_turbo_root(out: Path, projects: list[Project], pad: int, n: int) -> None:
    # --cutoff: turbo's opt-in (2.10+) that hashes the direct dependencies' output files instead
    # of their task hashes, beside the package's own sources.
    build_inputs = ([{"mode": "startup", "globs": ["src/**"]}, {"mode": "dependencyOutputs"}]
                    if OPTIONS["cutoff"] else ["src/**"])
    write(out / "turbo.json", json.dumps({
        "ui": "stream",
        "tasks": {
            "build": {"dependsOn": ["^build"], "inputs": build_inputs, "outputs": ["dist/**"]},
            "test": {"dependsOn": ["build"], "inputs": ["src/**"], "outputs": []},
            "lint": {"inputs": ["src/**"], "outputs": []},
            "check": {"dependsOn": ["build", "test", "lint"]},
        },
    }, indent=2) + "\n")
    if OPTIONS["package_manager"] == "pnpm":
        write_pnpm_files(out, projects, pad)
    else:
        write_npm_lockfile(out, projects, pad, n)


def write_pnpm_files(out: Path, projects: list[Project], pad: int) -> None:
    """pnpm-workspace.yaml and a minimal pnpm-lock.yaml (v9): one importer per package, its
    workspace dependencies as links."""
    write(out / "pnpm-workspace.yaml", 'packages:\n  - "packages/*"\n')
    lines = [
        "lockfileVersion: '9.0'",
        "",
        "settings:",
        "  autoInstallPeers: true",
        "  excludeLinksFromLockfile: false",
        "",
        "importers:",
        "",
        "  .: {}",
        "",
    ]
    for p in projects:
        importer = f"packages/{name_of(p.index, pad)}"
        if not p.deps:
            lines += [f"  {importer}: {{}}", ""]
            continue
        lines += [f"  {importer}:", "    dependencies:"]
        for d in p.deps:
            lines += [f"      '{package_name(d, pad)}':",
                      "        specifier: workspace:*",
                      f"        version: link:../{name_of(d, pad)}"]
        lines.append("")
    write(out / "pnpm-lock.yaml", "\n".join(lines))


def write_npm_lockfile(out: Path, projects: list[Project], pad: int, n: int) -> None:
    """A minimal npm v3 lockfile: the root, one link per workspace package and each package's
    manifest fields."""
    packages: dict[str, dict] = {
        "": {"name": f"bench-ws-{n}", "workspaces": ["packages/*"]},
    }
    for p in projects:
        packages[f"node_modules/{package_name(p.index, pad)}"] = {
            "resolved": f"packages/{name_of(p.index, pad)}",
            "link": True,
        }
    for p in projects:
        entry: dict = {"name": package_name(p.index, pad), "version": f"1.{p.layer}.0"}
        if p.deps:
            entry["dependencies"] = {package_name(d, pad): "workspace:*" for d in p.deps}
        packages[f"packages/{name_of(p.index, pad)}"] = entry
    write(out / "package-lock.json", json.dumps({
        "name": f"bench-ws-{n}",
        "lockfileVersion": 3,
        "requires": True,
        "packages": packages,
    }, indent=2) + "\n")


def turbo_project_package(package: dict, project: Project) -> None:
    package["scripts"] = {"build": build_command(), "test": TEST_COMMAND, "lint": LINT_COMMAND}


# --- Nx ----------------------------------------------------------------------------------------

def write_nx_root(out: Path, projects: list[Project], pad: int, n: int) -> None:
    def shell(command: str) -> dict:
        return {"executor": "nx:run-commands", "options": {"command": command, "cwd": "{projectRoot}"}}

    config = {
        "analytics": False,
        "neverConnectToCloud": True,
        "useDaemonProcess": False,
        "tui": {"enabled": False},
        # Nx 24 otherwise keeps its cache and task database in a per-user directory shared by
        # every checkout of the same repository; a relative cacheDirectory keeps both in the
        # checkout (where every other tool keeps its cache), so copies stay independent.
        "cacheDirectory": ".nx/cache",
        "namedInputs": {"src": ["{projectRoot}/src/**/*"]},
        "targetDefaults": {
            "build": {**shell(build_command()), "cache": True, "dependsOn": ["^build"],
                      "inputs": ["src", "^src"], "outputs": ["{projectRoot}/dist"]},
            "test": {**shell(TEST_COMMAND), "cache": True, "dependsOn": ["build"],
                     "inputs": ["src", "^src"], "outputs": []},
            "lint": {**shell(LINT_COMMAND), "cache": True, "inputs": ["src"], "outputs": []},
            "check": {"executor": "nx:noop", "dependsOn": ["build", "test", "lint"]},
        },
    }
    if OPTIONS["package_manager"] == "pnpm":
        # Nx's defaults for a workspace without @nx/* plugins, but no lockfile analysis: Nx
        # refuses a pnpm lockfile without an installed node_modules/.modules.yaml (and there are
        # no external packages in it to find).
        config["pluginsConfig"] = {"@nx/js": {"analyzePackageJson": True, "analyzeLockfile": False,
                                              "analyzeSourceFiles": False}}
    write(out / "nx.json", json.dumps(config, indent=2) + "\n")


def nx_project_package(package: dict, project: Project) -> None:
    # The targets take everything from nx.json's targetDefaults; `includedScripts: []` keeps Nx
    # from inferring `nx:run-script` targets from the turbo flavour's scripts.
    package["nx"] = {"includedScripts": [], "targets": {"build": {}, "test": {}, "lint": {},
                                                        "check": {}}}


# --- moon ---------------------------------------------------------------------------------------

def write_moon_root(out: Path, projects: list[Project], pad: int, n: int) -> None:
    (out / ".moon" / "tasks").mkdir(parents=True)
    write(out / ".moon" / "workspace.yml", (
        "projects:\n"
        "  - 'packages/*'\n"
        "vcs:\n"
        "  client: 'git'\n"
        "  defaultBranch: 'main'\n"
        "telemetry: false\n"
    ))
    # `script` (not `command`): the commands use `&&` and globs, which only a script runs
    # through a shell. `outputs: ['dist']` (a folder): `dist/**/*` would re-extract the
    # archive on every hit. `^:build` needs the project edges, which moon.yml's dependsOn gives
    # (without its JavaScript toolchain moon reads no package.json dependencies).
    # --cutoff: moon's per-dependency opt-in (2.3+): the dependency's outputs, not its hash.
    build_deps = ("[{ target: '^:build', cacheStrategy: 'outputs' }]" if OPTIONS["cutoff"]
                  else "['^:build']")
    write(out / ".moon" / "tasks" / "all.yml", (
        "tasks:\n"
        "  build:\n"
        f"    script: '{build_command()}'\n"
        f"    deps: {build_deps}\n"
        "    inputs: ['src/**/*']\n"
        "    outputs: ['dist']\n"
        "  test:\n"
        f"    script: '{TEST_COMMAND}'\n"
        "    deps: ['~:build']\n"
        "    inputs: ['src/**/*']\n"
        "  lint:\n"
        f"    script: '{LINT_COMMAND}'\n"
        "    inputs: ['src/**/*']\n"
        "  check:\n"
        "    deps: ['~:build', '~:test', '~:lint']\n"
    ))


def write_moon_project(pdir: Path, project: Project, pad: int) -> None:
    deps = ", ".join(f"'{name_of(d, pad)}'" for d in project.deps)
    write(pdir / "moon.yml", f"dependsOn: [{deps}]\n")


class Flavour:
    """One tool's configuration: root files, root package.json fields, per-project package.json
    fields and per-project files (each hook optional)."""

    def __init__(self, root_files=None, root_package=None, project_package=None, project_files=None):
        self.root_files = root_files
        self.root_package = root_package
        self.project_package = project_package
        self.project_files = project_files


# The configuration flavours. They all write into the same tree, so that one generated commit
# serves all three tools.
FLAVOURS = {
    "vx": Flavour(root_files=write_vx_root, project_files=write_vx_project),
    "turbo": Flavour(root_files=write_turbo_root, root_package=turbo_root_package,
                     project_package=turbo_project_package),
    "nx": Flavour(root_files=write_nx_root, project_package=nx_project_package),
    "moon": Flavour(root_files=write_moon_root, project_files=write_moon_project),
}


def write_project(out: Path, project: Project, pad: int, flavours: list[str]) -> None:
    name = name_of(project.index, pad)
    pdir = out / "packages" / name
    (pdir / "src").mkdir(parents=True)
    package = {
        "name": f"@bench/{name}",
        "version": f"1.{project.layer}.0",
        "private": True,
    }
    if project.deps:
        package["dependencies"] = {package_name(d, pad): "workspace:*" for d in project.deps}
    for flavour in flavours:
        if FLAVOURS[flavour].project_package:
            FLAVOURS[flavour].project_package(package, project)
    write(pdir / "package.json", json.dumps(package, indent=2) + "\n")
    write(pdir / "src" / "index.txt", f"{name} (layer {project.layer})\n")
    for letter in SOURCE_LETTERS[: project.sources]:
        write(pdir / "src" / f"{letter}.txt", f"{name} source {letter}\n" * (1 + project.index % 7))
    for flavour in flavours:
        if FLAVOURS[flavour].project_files:
            FLAVOURS[flavour].project_files(pdir, project, pad)


def git(out: Path, *argv: str) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", *argv], cwd=out, env=env, check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", type=int, required=True, metavar="N", help="number of projects (≥ 1)")
    ap.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory to create")
    ap.add_argument("--seed", type=int, default=1, help="PRNG seed (default 1)")
    ap.add_argument("--layer-width", type=int, default=0, metavar="W",
                    help="projects per layer (default ceil(sqrt(N)))")
    ap.add_argument("--max-deps", type=int, default=4, metavar="K",
                    help="most dependencies on the layer below (default 4)")
    ap.add_argument("--skip-chance", type=float, default=0.2, metavar="P",
                    help="chance of one extra edge to a deeper layer (default 0.2)")
    ap.add_argument("--tools", default="vx,turbo,nx,moon", metavar="LIST",
                    help="comma-separated configuration flavours to write (default vx,turbo,nx,moon)")
    ap.add_argument("--package-manager", choices=sorted(PACKAGE_MANAGERS), default="npm",
                    help="the package manager turbo runs scripts with (default npm): decides "
                         "packageManager and the lockfile (pnpm: pnpm-workspace.yaml and "
                         "pnpm-lock.yaml)")
    ap.add_argument("--cutoff", action="store_true",
                    help="builds drop `#` comment lines (a comment edit writes the same outputs), "
                         "and turbo and moon fold their dependencies' outputs (dependencyOutputs, "
                         "cacheStrategy: outputs), as vx does by default")
    ap.add_argument("--force", action="store_true", help="replace DIR if it exists")
    ap.add_argument("--no-git", action="store_true", help="write the files only (no git repository)")
    args = ap.parse_args()

    n = args.projects
    if n < 1:
        ap.error("--projects must be at least 1")
    if args.max_deps < 1:
        ap.error("--max-deps must be at least 1")
    args.layer_width = args.layer_width or math.ceil(math.sqrt(n))
    requested = {t.strip() for t in args.tools.split(",") if t.strip()}
    for flavour in sorted(requested - FLAVOURS.keys()):
        ap.error(f"unknown flavour `{flavour}` (available: {', '.join(FLAVOURS)})")
    if not requested:
        ap.error("--tools names no flavour")
    # A fixed order (and no duplicates), so that the same set of tools gives the same bytes.
    flavours = [f for f in FLAVOURS if f in requested]

    OPTIONS["package_manager"] = args.package_manager
    OPTIONS["cutoff"] = args.cutoff

    out: Path = args.out
    if out.exists():
        if not args.force:
            ap.error(f"{out} exists (use --force to replace it)")
        shutil.rmtree(out)
    started = time.monotonic()

    pad = max(4, len(str(n)))
    projects = plan(n, args.layer_width, args.max_deps, args.skip_chance, args.seed)
    edges = sum(len(p.deps) for p in projects)
    layers = projects[-1].layer + 1

    out.mkdir(parents=True)
    write_root_files(out, n, args, edges, layers, flavours)
    for flavour in flavours:
        FLAVOURS[flavour].root_files(out, projects, pad, n)
    for project in projects:
        write_project(out, project, pad, flavours)

    if not args.no_git:
        git(out, "init", "--quiet")
        git(out, "symbolic-ref", "HEAD", "refs/heads/main")
        git(out, "add", "--all")
        git(out, "commit", "--quiet", "--no-verify", "-m", f"generated workspace: {n} projects, seed {args.seed}")

    elapsed = time.monotonic() - started
    print(f"{out}: {n} projects, {layers} layers of {args.layer_width}, {edges} edges "
          f"({elapsed:.2f}s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
