#!/usr/bin/env python3
"""What the npm launcher costs: vx called directly and through each way in, on one workspace.

    python3 scripts/package --out target/vx-release          # or --binary target/release/vx
    python3 bench/launcher.py --dist target/vx-release --projects 100 --rounds 15

Publishes the packed npm packages to a throwaway Verdaccio on loopback (from .test-tools/pm,
which scripts/test installs), installs them with npm into a workspace made by
bench/generate.py, runs `vx run build --all` once to fill the cache, then times, in rotating
order each round:

- `direct`: the platform package's binary, `run build --all` (everything cached);
- `.bin/vx`: `node_modules/.bin/vx run build --all` (the launcher's shell path, which `exec`s);
- `node launcher`: `node node_modules/@vx-run/cli/bin/vx run build --all` (its Node path, what
  Yarn Berry runs);
- `npx vx`: `npx --no -- vx run build --all` (npm's own start included);

and the same four with `--version` instead, where vx's own work is nearly nothing, so the
difference is the launcher's. Prints median, minimum and maximum wall time of each and the
median's difference from `direct`.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_registry(tmp, tarballs):
    verdaccio = ROOT / ".test-tools/pm/node_modules/verdaccio/bin/verdaccio"
    if not verdaccio.exists():
        sys.exit("bench/launcher.py: Verdaccio is missing: run scripts/test once (it installs "
                 ".test-tools/pm), or npm install --prefix .test-tools/pm verdaccio@6.8.0")
    port = free_port()
    config = tmp / "config.yaml"
    config.write_text(
        f"storage: {tmp / 'storage'}\nauth:\n  htpasswd:\n    file: {tmp / 'htpasswd'}\n"
        f"uplinks: {{}}\npackages:\n  '**':\n    access: $all\n    publish: $authenticated\n"
        f"listen: 127.0.0.1:{port}\nmax_body_size: 200mb\n"
        f"log: {{ type: stdout, format: pretty, level: warn }}\n")
    server = subprocess.Popen(["node", verdaccio, "--config", config],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(f"{url}/-/ping", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    request = urllib.request.Request(
        f"{url}/-/user/org.couchdb.user:bench", method="PUT",
        data=json.dumps({"name": "bench", "password": "bench-password"}).encode(),
        headers={"content-type": "application/json"})
    token = json.load(urllib.request.urlopen(request))["token"]
    npmrc = tmp / "npmrc"
    npmrc.write_text(f"registry={url}/\n//127.0.0.1:{port}/:_authToken={token}\n")
    for tarball in tarballs:
        subprocess.run(["npm", "publish", tarball, "--userconfig", npmrc, "--cache",
                        tmp / "npm-cache"], check=True, capture_output=True, cwd=tmp)
    return server, npmrc


def timed(cmd, cwd):
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "target/vx-release")
    parser.add_argument("--projects", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    args.dist = args.dist.resolve()
    manifest = json.loads((args.dist / "manifest.json").read_text())
    platform = "linux-x64-gnu"
    tarballs = [args.dist / manifest["front"], args.dist / manifest["built"][platform]["npm"]]

    tmp = Path(tempfile.mkdtemp(prefix="vx-launcher-bench-"))
    server = None
    try:
        server, npmrc = start_registry(tmp, tarballs)
        ws = tmp / "ws"
        subprocess.run([sys.executable, ROOT / "bench/generate.py", "--projects",
                        str(args.projects), "--out", ws, "--tools", "vx"], check=True,
                       stdout=subprocess.DEVNULL)
        # npm refuses `workspace:*`; `*`, which the local copy satisfies, keeps vx's edges.
        for manifest_path in ws.glob("packages/*/package.json"):
            text = manifest_path.read_text()
            manifest_path.write_text(text.replace('"workspace:*"', '"*"'))
        shutil.copy(npmrc, ws / ".npmrc")
        subprocess.run(["npm", "install", "-D", "@vx-run/cli", "--ignore-scripts", "--cache",
                        tmp / "npm-cache", "--no-audit", "--no-fund"], cwd=ws, check=True,
                       stdout=subprocess.DEVNULL)
        direct = ws / f"node_modules/@vx-run/cli-{platform}/bin/vx"
        launcher = ws / "node_modules/@vx-run/cli/bin/vx"
        ways = {
            "direct": [direct],
            ".bin/vx": [ws / "node_modules/.bin/vx"],
            "node launcher": ["node", launcher],
            "npx vx": ["npx", "--no", "--", "vx"],
        }
        os.environ["npm_config_update_notifier"] = "false"
        timed([direct, "run", "build", "--all"], ws)
        for what, extra in [("run build --all (warm)", ["run", "build", "--all"]),
                            ("--version", ["--version"])]:
            times = {name: [] for name in ways}
            names = list(ways)
            for r in range(args.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for name in order:
                    times[name].append(timed(ways[name] + extra, ws))
            base = statistics.median(times["direct"])
            print(f"\nvx {what}: {args.projects} projects, {args.rounds} rounds, "
                  f"vx {manifest['version']}")
            print(f"{'way':<16}{'median':>10}{'min':>10}{'max':>10}{'+ vs direct':>14}")
            for name in names:
                t = times[name]
                med = statistics.median(t)
                print(f"{name:<16}{med * 1000:>8.1f}ms{min(t) * 1000:>8.1f}ms"
                      f"{max(t) * 1000:>8.1f}ms{(med - base) * 1000:>+12.1f}ms")
    finally:
        if server is not None:
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
