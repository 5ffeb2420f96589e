#!/usr/bin/env bash
# Every test and lint gate, in order of how fast they fail. This is what `make test` and
# .ci/run execute; it sets up everything it needs on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }

step "set-up (virtualenv, release build of the extension)"
bash scripts/bootstrap.sh
PY=.venv/bin/python

# The wheel the last step installs is a second release build (another target, the limited API
# of 3.9, zig as the linker: ~4.5 min of CPU). It runs from here on in the background at idle
# priority (SCHED_IDLE: it gets a CPU only when the gates and the tests leave one idle, so it
# does not slow them), in a target directory of its own, and the smoke test waits for it.
# It gets a process group of its own (to be stopped as a whole) but stays in this session: a
# new session (setsid) is a new autogroup on kernels with sched_autogroup, and an autogroup gets
# an equal share of the CPU whatever its tasks' policy -- measured: the "idle" build then took
# a whole core of the two from cargo test.
wheel_dir=$(mktemp -d /tmp/streamwire-wheel.XXXXXX)
WHEEL_TARGET_DIR="$PWD/target/wheel" chrt --idle 0 "$PY" -c \
    'import os, sys; os.setpgid(0, 0); os.execvp("bash", ["bash", *sys.argv[1:]])' \
    scripts/wheel_build.sh "$wheel_dir" >"$wheel_dir/build.log" 2>&1 &
wheel_pid=$!
# A failing gate ends the run: the build goes with it (its whole process group).
trap 'kill -- -"$wheel_pid" 2>/dev/null || true; rm -rf "$wheel_dir"' EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "cargo test (unit, proptest, golden frames, bounded fuzz run)"
STREAMWIRE_FUZZ_ITERS=${STREAMWIRE_FUZZ_ITERS:-20000} cargo test --workspace --quiet

step "ruff"
.venv/bin/ruff check python tests benches scripts
.venv/bin/ruff format --check python tests benches scripts

step "mypy --strict (package)"
.venv/bin/mypy --strict python/streamwire

step "stubtest (.pyi against the compiled module)"
.venv/bin/python -m mypy.stubtest streamwire._native --allowlist scripts/stubtest-allowlist.txt

step "mkdocs build --strict (the documentation site: a broken link or reference fails)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict  # not --quiet: it also silences --strict

step "pytest (pulsar-lite, Apache Pulsar, official client, fault proxy)"
$PY -m pytest tests -q -p no:cacheprovider "$@"

step "wheel smoke (manylinux2014 abi3 wheel in a fresh virtualenv, no Rust, no source tree)"
t0=$(date +%s)
if ! wait "$wheel_pid"; then
    cat "$wheel_dir/build.log"
    echo "the wheel build failed" >&2
    exit 1
fi
echo "waited $(($(date +%s) - t0)) s for the wheel's background build"
WHEEL_SMOKE_WHEEL=$(ls "$wheel_dir"/streamwire-*-cp39-abi3-manylinux*_x86_64.whl) bash scripts/wheel_smoke.sh
