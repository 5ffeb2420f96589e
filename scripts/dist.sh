#!/usr/bin/env bash
# `make dist`: every wheel and the sdist into dist/, each wheel checked.
#
# Wheels (abi3, zig as the linker so glibc 2.17 symbols are linked and aarch64 cross-links):
#   cp39-abi3  manylinux_2_17 x86_64 and aarch64: any CPython >= 3.9 (EMR's 3.9 included);
#   cp311-abi3 manylinux_2_17 x86_64 and aarch64: the same API plus the buffer protocol, which
#              pip prefers on CPython >= 3.11 (faster pyarrow and str sends, docs/install.md);
#   cp39-abi3  musllinux_1_2 x86_64 (Alpine and other musl systems; DIST_MUSL=0 leaves it out).
# Each is checked with abi3audit (limited-API symbols only) and auditwheel (the platform tag).
# auditwheel cannot judge the musl wheel on a glibc host: zig links it against musl's own name
# for the C library, `libc.so`, where Alpine's packages name it `libc.musl-x86_64.so.1`
# (musl's loader answers both with itself), and auditwheel knows only the second. So that
# wheel is checked instead against the musl package's libc (Debian's `musl`, downloaded and
# unpacked into a temporary directory — never installed: with musl's loader present, the
# snappy-java inside Spark picks its musl build and every Parquet write fails): its only needed
# library is libc.so, and every symbol it takes from the C library (weak ones aside) is one
# musl defines.
# The sdist is checked by building a wheel from it, unpacked in a temporary directory.
#
#   make dist                    # or: bash scripts/dist.sh; needs .venv (scripts/bootstrap.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
out=dist
mkdir -p "$out"
rustup target add x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu >/dev/null
musl=${DIST_MUSL:-1}
if [ "$musl" = 1 ]; then
    rustup target add x86_64-unknown-linux-musl >/dev/null
    musl_root=$(mktemp -d /tmp/streamwire-musl-libc.XXXXXX)
    trap 'rm -rf "$musl_root"' EXIT
    (cd "$musl_root" && { apt-get download musl >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get download musl >/dev/null; }; } &&
        dpkg-deb -x musl_*.deb root)
    musl_libc=$musl_root/root/lib/x86_64-linux-musl/libc.so
fi

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
[ "$musl" = 1 ] && build x86_64-unknown-linux-musl musllinux_1_2

check_musl() {  # check_musl WHEEL: see the note at the top
    local dir so needed missing
    dir=$(mktemp -d /tmp/streamwire-musl.XXXXXX)
    (cd "$dir" && python -m zipfile -e "$1" .)
    so=$(ls "$dir"/streamwire/_native*.so)
    needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    [ "$needed" = "libc.so " ] || { echo "musl wheel needs: $needed" >&2; return 1; }
    missing=$(comm -23 \
        <(nm -D --undefined-only "$so" | awk '$1 == "U" {print $2}' | grep -v '^_\?Py' | sort -u) \
        <(nm -D --defined-only "$musl_libc" | awk '{print $NF}' | sort -u))
    rm -rf "$dir"
    [ -z "$missing" ] || { echo "not in musl's libc: $missing" >&2; return 1; }
    echo "needs only libc.so; every C library symbol it takes is in $musl_libc"
}

for wheel in "$out"/streamwire-*.whl; do
    echo "==> check $(basename "$wheel")"
    abi3audit --strict "$wheel" >/dev/null
    case "$wheel" in
        *musllinux*) check_musl "$PWD/$wheel" ;;
        *) auditwheel show "$wheel" | tr '\n' ' ' |
            grep -Eo 'consistent with the following platform tag: "[^"]+"' ;;
    esac
done

echo "==> sdist"
maturin sdist --out "$out"
sdist=$(ls -t "$out"/streamwire-*.tar.gz | head -1)
# The sdist must build with only Rust and maturin: unpack it away from the source tree and
# build a wheel from it there (no zig, the host's linker: what `pip install` of it does).
tmp=$(mktemp -d /tmp/streamwire-sdist.XXXXXX)
trap 'rm -rf "$tmp" "${musl_root:-}"' EXIT
tar -xzf "$sdist" -C "$tmp"
(cd "$tmp"/streamwire-*/ && CARGO_TARGET_DIR="$OLDPWD/target" nice -n 5 maturin build --release \
    --quiet --out "$tmp/out")
ls "$tmp"/out/streamwire-*-cp39-abi3-*.whl >/dev/null
echo "==> sdist builds: $(basename "$(ls "$tmp"/out/*.whl)")"
ls -la "$out"
