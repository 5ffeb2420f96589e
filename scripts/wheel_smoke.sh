#!/usr/bin/env bash
# The wheel as a user installs it: build the x86_64 manylinux2014 abi3 wheel (zig as the
# linker), check its tags (auditwheel, abi3audit), install it into a fresh virtualenv outside
# the source tree with no Rust toolchain on PATH, and run scripts/wheel_smoke.py there
# (import, produce/consume against pulsar-lite, Spark's format("streamwire"), the CLI).
#
#   bash scripts/wheel_smoke.sh [--no-spark]     # scripts/test.sh runs it; needs .venv (bootstrap)
#
# WHEEL_SMOKE_OUT=DIR keeps the built wheel in DIR (default: a temporary directory);
# WHEEL_SMOKE_WHEEL=FILE smokes a wheel built before (by scripts/wheel_build.sh) instead.
# The fresh virtualenv installs the same versions as .venv (its `pip freeze` is the constraints
# file), so pip takes them from its cache instead of resolving newer ones.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
work=$(mktemp -d /tmp/streamwire-wheel-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT

t0=$(date +%s)
if [ -n "${WHEEL_SMOKE_WHEEL:-}" ]; then
    # Built already (scripts/test.sh builds it in the background while the tests run).
    wheel=$WHEEL_SMOKE_WHEEL
    echo "wheel smoke: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB), built beforehand"
else
    bash scripts/wheel_build.sh "${WHEEL_SMOKE_OUT:-$work/dist}"
    wheel=$(ls -t "${WHEEL_SMOKE_OUT:-$work/dist}"/streamwire-*-cp39-abi3-manylinux*_x86_64.whl | head -1)
    echo "wheel smoke: built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) in $(($(date +%s) - t0)) s"
fi
t1=$(date +%s)

# The platform tag must be the glibc 2.17 one and the extension must use the limited API only.
.venv/bin/auditwheel show "$wheel" | tee "$work/auditwheel.txt"
grep -q 'manylinux_2_17_x86_64' "$work/auditwheel.txt"
.venv/bin/abi3audit --strict --report "$wheel"

.venv/bin/pip freeze --exclude-editable | grep -v '^streamwire' >"$work/constraints.txt"
# A user's environment: no cargo/rustc on PATH, no PYTHONPATH, cwd outside the repo, and a
# virtualenv made by the system interpreter (no .pth pointing into python/).
clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -e '\.cargo/bin' -e "^$ROOT" | paste -sd:)
(
    cp "$ROOT/scripts/wheel_smoke.py" "$work/"
    cd "$work"
    unset PYTHONPATH VIRTUAL_ENV
    export PATH="$clean_path"
    if command -v cargo >/dev/null || command -v rustc >/dev/null; then
        echo "wheel smoke: a Rust toolchain is still on PATH" >&2
        exit 1
    fi
    python3 -m venv venv
    extra=$([ "${1:-}" = "--no-spark" ] && echo "" || echo "[spark]")
    venv/bin/pip install --quiet -c constraints.txt "${wheel}${extra}" pulsar-lite
    t2=$(date +%s)
    echo "wheel smoke: fresh virtualenv installed in $((t2 - t1)) s"
    venv/bin/python wheel_smoke.py "$ROOT" "$@"
)
echo "wheel smoke: $(($(date +%s) - t0)) s in all"
