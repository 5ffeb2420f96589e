#!/usr/bin/env bash
# `make dist`: every wheel and the sdist into dist/, each wheel checked.
#
# Wheels (abi3, zig as the linker so glibc 2.17 symbols are linked and aarch64 cross-links):
#   cp39-abi3  manylinux_2_17 x86_64 and aarch64: any CPython >= 3.9 (EMR's 3.9 included);
#   cp311-abi3 manylinux_2_17 x86_64 and aarch64: the same API plus the buffer protocol, which
#              pip prefers on CPython >= 3.11 (faster pyarrow and str sends, docs/install.md);
#   with DIST_MUSL=1, also cp39-abi3 musllinux_1_2 x86_64 (Alpine; not tried yet, off by default).
# Each is checked with auditwheel (the platform tag) and abi3audit (limited-API symbols only).
# The sdist is checked by building a wheel from it, unpacked in a temporary directory.
#
#   make dist                    # or: bash scripts/dist.sh; needs .venv (scripts/bootstrap.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
out=dist
mkdir -p "$out"
rustup target add x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu >/dev/null
[ "${DIST_MUSL:-0}" = 1 ] && rustup target add x86_64-unknown-linux-musl >/dev/null

build() {  # build TARGET COMPATIBILITY [cargo feature options]
    local target=$1 compat=$2
    shift 2
    echo "==> wheel $target $compat $*"
    nice -n 5 maturin build --release --quiet --zig --target "$target" --compatibility "$compat" \
        --out "$out" "$@"
}

for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; do
    build "$target" manylinux2014
    build "$target" manylinux2014 --no-default-features --features abi3-py311
done
[ "${DIST_MUSL:-0}" = 1 ] && build x86_64-unknown-linux-musl musllinux_1_2

for wheel in "$out"/streamwire-*.whl; do
    echo "==> check $(basename "$wheel")"
    auditwheel show "$wheel" | tr '\n' ' ' | grep -Eo 'consistent with the following platform tag: "[^"]+"'
    abi3audit --strict "$wheel" >/dev/null
done

echo "==> sdist"
maturin sdist --out "$out"
sdist=$(ls -t "$out"/streamwire-*.tar.gz | head -1)
# The sdist must build with only Rust and maturin: unpack it away from the source tree and
# build a wheel from it there (no zig, the host's linker: what `pip install` of it does).
tmp=$(mktemp -d /tmp/streamwire-sdist.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$sdist" -C "$tmp"
(cd "$tmp"/streamwire-*/ && CARGO_TARGET_DIR="$OLDPWD/target" nice -n 5 maturin build --release \
    --quiet --out "$tmp/out")
ls "$tmp"/out/streamwire-*-cp39-abi3-*.whl >/dev/null
echo "==> sdist builds: $(basename "$(ls "$tmp"/out/*.whl)")"
ls -la "$out"
