#!/usr/bin/env python3
"""vx beside a repository's own runner, after one `vx init` (issue 40's proof).

Run in a clone whose dependencies are installed and that has no vx.toml yet:

    python3 bench/adoption/prove.py --repo DIR --peer turbo|nx|scripts \
        --task build [--task test] [--vx PATH] \
        [--peer-cmd "pnpm -r run build"] [--vx-args "--filter @x/y..."] \
        [--break FILE::OLD::NEW] [--clean GLOB] [--init-args "--learn build"]

Steps, each printed as one line and all together as JSON at the end (--json FILE):
 1. the peer builds (`turbo run T`, `nx run-many -t T`, or --peer-cmd); the files it
    creates (untracked, outside node_modules and the runners' caches) are its output tree;
 2. they are removed; `vx init` writes the configuration (its report, with the comparison
    with the peer's plan, is kept);
 3. `vx run T --all` builds; its output tree is compared with the peer's (entries, types,
    modes, link texts, bytes);
 4. a second run: every task a hit (`--dry=json` before it says so);
 5. the outputs are removed and vx runs again: restored tree compared again;
 6. with --break: the edit is made in an upstream file; the peer and vx both run; each
    must fail; the file is restored.
Nothing is committed; the vx.toml files are left in place for inspection.
"""

import argparse
import glob
import hashlib
import json
import os
import shlex
import stat
import subprocess
import sys
import time

SKIP_PARTS = {"node_modules", ".turbo", ".nx", ".vx", ".git", ".cache"}


def sh(cmd, cwd, env=None, check=False):
    """Runs cmd (a list or a shell string); returns (exit, seconds, output tail)."""
    start = time.monotonic()
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        shell=isinstance(cmd, str),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    took = time.monotonic() - start
    if check and proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {cmd}\n{proc.stdout[-3000:]}")
    return proc.returncode, took, proc.stdout


def new_files(repo, before):
    """Untracked files now present that were not in `before` (git-ignored included)."""
    _, _, out = sh(
        ["git", "ls-files", "--others", "-z", "--directory", "--no-empty-directory"],
        repo,
    )
    _, _, ignored = sh(
        ["git", "ls-files", "--others", "--ignored", "--exclude-standard", "-z", "--directory"],
        repo,
    )
    paths = set(p for p in (out + ignored).split("\0") if p)
    return sorted(p for p in paths if p not in before and not skipped(p))


def skipped(path):
    parts = path.rstrip("/").split("/")
    return any(p in SKIP_PARTS for p in parts) or parts[-1] in ("vx.toml", "vx.lock")


def tree(repo, roots):
    """path -> (kind, mode, content digest or link text) under every root."""
    out = {}
    for root in roots:
        full = os.path.join(repo, root.rstrip("/"))
        for path in walk(full):
            rel = os.path.relpath(path, repo)
            if skipped(rel):
                continue
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", 0, "")
            else:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                out[rel] = ("file", st.st_mode & 0o111 != 0, digest)
    return out


def walk(path):
    if not os.path.lexists(path):
        return
    yield path
    if os.path.isdir(path) and not os.path.islink(path):
        for name in sorted(os.listdir(path)):
            if name in SKIP_PARTS:
                continue
            yield from walk(os.path.join(path, name))


def differ(a, b):
    """Paths whose entries differ, and which side has them (`a` is vx's, `b` the peer's or
    the build's a restore is compared with)."""
    lines = []
    for path in sorted(set(a) | set(b)):
        if path not in a:
            lines.append(f"only peer: {path}")
        elif path not in b:
            lines.append(f"only vx: {path}")
        elif a[path] != b[path]:
            lines.append(f"differs: {path} {a[path][:2]} vs {b[path][:2]}")
    return lines


def remove(repo, roots):
    for root in roots:
        full = os.path.join(repo, root.rstrip("/"))
        if os.path.islink(full) or os.path.isfile(full):
            os.unlink(full)
        elif os.path.isdir(full):
            subprocess.run(["rm", "-rf", full], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--peer", choices=["turbo", "nx", "scripts"], required=True)
    ap.add_argument("--task", action="append", required=True)
    ap.add_argument("--peer-cmd", help="the peer's build command (default by --peer)")
    ap.add_argument("--vx", default="vx")
    ap.add_argument("--vx-args", default="--all", help="vx's selection (default --all)")
    ap.add_argument("--init-args", default="", help="more arguments for vx init (--learn build)")
    ap.add_argument("--break", dest="brk", help="FILE::OLD::NEW, an edit that must fail both")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--clean", action="append", default=[],
                    help="a glob of paths to remove before the peer builds (outputs an install built)")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    tasks = args.task
    env = dict(os.environ, TURBO_TELEMETRY_DISABLED="1", DO_NOT_TRACK="1",
               NX_DAEMON="false", NX_NO_CLOUD="true", NX_TUI="false",
               TURBO_UI="false")
    env.pop("CI", None)
    peer_cmd = args.peer_cmd or {
        "turbo": f"node_modules/.bin/turbo run {' '.join(tasks)} --force",
        "nx": f"node_modules/.bin/nx run-many -t {','.join(tasks)} --skip-nx-cache",
        "scripts": None,
    }[args.peer]
    if not peer_cmd:
        sys.exit("--peer scripts needs --peer-cmd")
    vx_run = [args.vx, "run", *tasks, *shlex.split(args.vx_args)]
    result = {"repo": repo, "tasks": tasks, "peer_cmd": peer_cmd,
              "vx_run": " ".join(vx_run)}
    _, _, head = sh(["git", "rev-parse", "HEAD"], repo)
    result["commit"] = head.strip()
    for pattern in args.clean:
        for path in glob.glob(os.path.join(repo, pattern)):
            remove(repo, [os.path.relpath(path, repo)])
    before = set(new_files(repo, set()))

    code, took, out = sh(peer_cmd, repo, env)
    result["peer"] = {"exit": code, "seconds": round(took, 1)}
    print(f"peer build: exit {code} in {took:.1f} s")
    if code != 0:
        print(out[-3000:])
        sys.exit(1)
    created = new_files(repo, before)
    peer_tree = tree(repo, created)
    print(f"peer output: {len(peer_tree)} entries under {len(created)} new paths")
    remove(repo, created)

    code, took, report = sh([args.vx, "init", *shlex.split(args.init_args)], repo, env)
    result["init"] = {"exit": code, "report": report}
    print(f"vx init: exit {code}")
    for line in report.splitlines():
        if line.startswith(("compared with", "plans not compared", "  only", "  turbo",
                            "  Nx", "cache:", "learned", "not learned", "nothing learned")):
            print(f"  {line.strip()}")
    if code != 0:
        print(report)
        sys.exit(1)

    code, took, out = sh(vx_run, repo, env)
    result["vx_cold"] = {"exit": code, "seconds": round(took, 1)}
    print(f"vx build: exit {code} in {took:.1f} s")
    if code != 0:
        print(out[-3000:])
        sys.exit(1)
    vx_tree = tree(repo, created)
    extra = [p for p in new_files(repo, before) if p not in created]
    diff = differ(vx_tree, peer_tree) + [f"only vx: {p}" for p in extra]
    result["cold_diff"] = diff
    print(f"vx output vs peer: {len(diff)} differences of {len(peer_tree)} entries")
    for line in diff[:15]:
        print(f"  {line}")

    _, _, dry = sh(vx_run + ["--dry=json"], repo, env)
    rows = json.loads(dry)["tasks"]
    hits = sum(1 for r in rows if r["cache"].startswith("hit"))
    code, took, _ = sh(vx_run, repo, env)
    result["vx_warm"] = {"exit": code, "seconds": round(took, 1), "tasks": len(rows), "hits": hits}
    print(f"second run: {hits} of {len(rows)} tasks hits; exit {code} in {took:.2f} s")

    remove(repo, created + extra)
    code, took, _ = sh(vx_run, repo, env)
    restored = tree(repo, created)
    rdiff = differ(restored, vx_tree)
    result["restore"] = {"exit": code, "seconds": round(took, 1), "diff": rdiff}
    unrestored = [l for l in rdiff if l.startswith("only peer: ")]
    print(f"restore: exit {code} in {took:.2f} s; {len(rdiff) - len(unrestored)} entries "
          f"differ from vx's build, {len(unrestored)} not restored")
    # What was not restored, by its topmost path (a file the build writes beside its
    # declared outputs is neither runner's to restore).
    tops = sorted({l[len("only peer: "):] for l in unrestored})
    tops = [t for t in tops if not any(t.startswith(u + "/") for u in tops)]
    for top in tops[:10]:
        print(f"  not restored: {top}")

    if args.brk:
        path, old, new = args.brk.split("::")
        full = os.path.join(repo, path)
        with open(full) as f:
            text = f.read()
        if old not in text:
            sys.exit(f"--break: {old!r} is not in {path}")
        try:
            with open(full, "w") as f:
                f.write(text.replace(old, new, 1))
            pcode, _, pout = sh(peer_cmd, repo, env)
            vcode, _, vout = sh(vx_run, repo, env)
        finally:
            with open(full, "w") as f:
                f.write(text)
        result["break"] = {"file": path, "peer_exit": pcode, "vx_exit": vcode}
        print(f"upstream edit in {path}: peer exit {pcode}, vx exit {vcode}")
        if vcode == 0:
            print(vout[-2000:])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
