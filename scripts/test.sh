#!/usr/bin/env bash
# Every test and lint gate, in order of how fast they fail. This is what `make test` and
# .ci/run execute; it sets up everything it needs on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }

step "set-up (virtualenv, release build of the extension)"
bash scripts/bootstrap.sh
PY=.venv/bin/python

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
bash scripts/wheel_smoke.sh
