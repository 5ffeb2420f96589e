#!/usr/bin/env bash
# The x86_64 manylinux2014 abi3 wheel (zig as the linker) into DIR: the wheel the smoke test
# (scripts/wheel_smoke.sh) installs.
#
#   bash scripts/wheel_build.sh DIR
#
# WHEEL_TARGET_DIR=PATH builds in a cargo target directory of its own (scripts/test.sh runs this
# in the background, at idle priority, while cargo and the tests use target/: cargo's lock on a
# target directory would otherwise make them wait for each other).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: wheel_build.sh DIR}
PATH="$PWD/.venv/bin:$PATH" CARGO_TARGET_DIR="${WHEEL_TARGET_DIR:-$PWD/target}" \
    nice -n 5 maturin build --release --quiet --zig \
    --target x86_64-unknown-linux-gnu --compatibility manylinux2014 --out "$out"
