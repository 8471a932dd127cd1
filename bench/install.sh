#!/usr/bin/env bash
# Install the pinned Turborepo, Nx and moon used by the side-by-side benchmark into
# bench/node_modules (git-ignored). Idempotent: does nothing when the pinned versions are there.
#
#   bench/install.sh
#
# Uses the machine's node and npm (`npm install --no-audit --no-fund`). No package.json or lockfile
# is written to bench/ (--no-save --no-package-lock); --ignore-scripts skips Nx's postinstall,
# which only updates an Nx Cloud client (the platform binaries of both tools come as optional
# dependencies and need no script). Nothing is installed globally.
set -euo pipefail

TURBO_VERSION=2.11.11
NX_VERSION=24.0.6
MOON_VERSION=2.5.5

cd "$(dirname "$0")"

for tool in node npm; do
    if ! command -v "$tool" >/dev/null; then
        echo "install.sh: \`$tool\` is not on PATH (the benchmark needs Node.js and npm)" >&2
        exit 2
    fi
done

installed() {  # the version of node_modules/$1, or nothing
    node -e 'try { process.stdout.write(require(process.argv[1]).version) } catch {}' \
        "$PWD/node_modules/$1/package.json"
}

if [[ $(installed turbo) == "$TURBO_VERSION" && $(installed nx) == "$NX_VERSION" \
      && $(installed @moonrepo/cli) == "$MOON_VERSION" ]] \
    && node_modules/.bin/turbo --version >/dev/null 2>&1; then
    echo "install.sh: turbo $TURBO_VERSION, nx $NX_VERSION and moon $MOON_VERSION already in bench/node_modules" >&2
    exit 0
fi

echo "install.sh: installing turbo@$TURBO_VERSION, nx@$NX_VERSION and @moonrepo/cli@$MOON_VERSION into bench/node_modules" >&2
npm install --no-audit --no-fund --no-save --no-package-lock --ignore-scripts --prefix . \
    "turbo@$TURBO_VERSION" "nx@$NX_VERSION" "@moonrepo/cli@$MOON_VERSION"

# Check that both start (the platform packages were resolved) and have the pinned versions.
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1 TURBO_NO_UPDATE_NOTIFIER=1 NX_DAEMON=false NX_NO_CLOUD=true
got_turbo=$(node_modules/.bin/turbo --version)
got_nx=$(installed nx)
if [[ $got_turbo != "$TURBO_VERSION" || $got_nx != "$NX_VERSION" ]]; then
    echo "install.sh: expected turbo $TURBO_VERSION and nx $NX_VERSION, got turbo $got_turbo and nx $got_nx" >&2
    exit 1
fi
if ! ls node_modules/@nx/nx-* >/dev/null 2>&1; then
    echo "install.sh: Nx's native binding (@nx/nx-<platform>) is missing from bench/node_modules" >&2
    exit 1
fi
# moon's native binary (the benchmark runs it directly, not the Node shim).
moon=$(ls node_modules/@moonrepo/core-*/moon 2>/dev/null | head -1)
if [[ -z $moon ]] || [[ $("$moon" --version) != "moon $MOON_VERSION" ]]; then
    echo "install.sh: moon's native binary (@moonrepo/core-<platform>) $MOON_VERSION is missing from bench/node_modules" >&2
    exit 1
fi
echo "install.sh: turbo $got_turbo, nx $got_nx, moon $MOON_VERSION" >&2
