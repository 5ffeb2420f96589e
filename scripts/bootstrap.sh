#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: a virtualenv in .venv with every test and demo
# dependency, and the streamwire extension built in release mode into it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# System tools the test peers need: a JDK 17 + Maven (Apache Pulsar standalone), openssl (TLS
# certificates for the security tests). The machine image has them; install any that is missing.
missing=()
command -v javac >/dev/null || missing+=(openjdk-17-jdk-headless)  # javac: tests/schemas Java interop
command -v mvn >/dev/null || missing+=(maven)
command -v openssl >/dev/null || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing missing system packages: ${missing[*]}"
    apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha
want=$(sha256sum requirements-dev.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    .venv/bin/pip install --quiet --upgrade pip
    .venv/bin/pip install --quiet -r requirements-dev.txt
    echo "$want" > "$stamp"
fi
# Build the extension (release) and install it into the venv in editable mode: the abi3 build
# for CPython 3.11+, the one pip installs on 3.11 (scripts/dist.sh builds the 3.9+ one too).
# A version-tagged `_native.cpython-*.so` left by an older build would be imported before the
# new `_native.abi3.so` (Python tries the tagged suffix first), so it goes.
rm -f python/streamwire/_native.cpython-*.so
VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" \
    .venv/bin/maturin develop --release --quiet --no-default-features --features abi3-py311 >/dev/null
# The PIP-64 gateway binary (tests/gateway start it; deployments without Python use it).
cargo build --release --quiet -p streamwire-gateway --bin streamwire-gateway
