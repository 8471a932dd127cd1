#!/usr/bin/env python3
"""Generate a synthetic monorepo for benchmarking vx (and, later, Turborepo and Nx).

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
  check  group: build + test

Run time and memory are linear in N (each project draws a bounded number of edges; files are
written once; one `git add` and one `git commit` for the whole tree).

Other tools: `--tools` names the configuration flavours to write. Only `vx` exists today. The
Turborepo (`turbo.json` + package.json `scripts`) and Nx (`nx.json` + `project.json`) writers
will be added beside `write_vx_files` with the side-by-side benchmark, over the very same
workspace shape; see the TODO at FLAVOURS.
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


def write_root_files(out: Path, n: int, args: argparse.Namespace, edges: int, layers: int) -> None:
    write(out / "package.json", json.dumps({
        "name": f"bench-ws-{n}",
        "private": True,
        "workspaces": ["packages/*"],
    }, indent=2) + "\n")
    write(out / ".gitignore", "dist/\n.vx/\nnode_modules/\n")
    write(out / "README.md", (
        f"# Generated benchmark workspace ({n} projects)\n\n"
        f"Written by `bench/generate.py --projects {n} --seed {args.seed} "
        f"--layer-width {args.layer_width} --max-deps {args.max_deps} "
        f"--skip-chance {args.skip_chance}`.\n"
        f"{layers} layers, {edges} project edges. Do not edit; regenerate instead.\n"
    ))


def write_vx_root(out: Path) -> None:
    write(out / "vx.toml", '[workspace]\nmembers = ["packages/*"]\n')


def write_vx_project(pdir: Path, project: Project, pad: int) -> None:
    write(pdir / "vx.toml", (
        "[tasks.build]\n"
        'command = "mkdir -p dist && cp src/* dist/"\n'
        'depends-on = ["^build"]\n'
        'cache = { inputs = ["src/**"], outputs = ["dist/**"] }\n'
        "\n"
        "[tasks.test]\n"
        'command = "test -f dist/index.txt"\n'
        'depends-on = ["build"]\n'
        'cache = { inputs = ["src/**"], outputs = [] }\n'
        "\n"
        "[tasks.check]\n"
        'depends-on = ["build", "test"]\n'
    ))


# The configuration flavours, each a pair (root writer, per-project writer).
# TODO(benchmark issue): add "turbo" (root turbo.json with build/test/check pipelines, and
# package.json "scripts" mirroring the vx commands) and "nx" (nx.json + per-project
# project.json with targets and dependsOn: ["^build"]). They write beside the vx files in the
# same tree so that one generated commit serves all three tools.
FLAVOURS = {
    "vx": (write_vx_root, write_vx_project),
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
        package["dependencies"] = {f"@bench/{name_of(d, pad)}": "workspace:*" for d in project.deps}
    write(pdir / "package.json", json.dumps(package, indent=2) + "\n")
    write(pdir / "src" / "index.txt", f"{name} (layer {project.layer})\n")
    for letter in SOURCE_LETTERS[: project.sources]:
        write(pdir / "src" / f"{letter}.txt", f"{name} source {letter}\n" * (1 + project.index % 7))
    for flavour in flavours:
        FLAVOURS[flavour][1](pdir, project, pad)


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
    ap.add_argument("--tools", default="vx", metavar="LIST",
                    help="comma-separated configuration flavours to write (only `vx` today)")
    ap.add_argument("--force", action="store_true", help="replace DIR if it exists")
    ap.add_argument("--no-git", action="store_true", help="write the files only (no git repository)")
    args = ap.parse_args()

    n = args.projects
    if n < 1:
        ap.error("--projects must be at least 1")
    if args.max_deps < 1:
        ap.error("--max-deps must be at least 1")
    args.layer_width = args.layer_width or math.ceil(math.sqrt(n))
    flavours = [t.strip() for t in args.tools.split(",") if t.strip()]
    for flavour in flavours:
        if flavour not in FLAVOURS:
            ap.error(f"unknown or not yet available flavour `{flavour}` (available: {', '.join(FLAVOURS)})")

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
    write_root_files(out, n, args, edges, layers)
    for flavour in flavours:
        FLAVOURS[flavour][0](out)
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
