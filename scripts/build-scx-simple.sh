#!/bin/sh
# Build scx_simple, the kernel's own example sched_ext scheduler
# (tools/sched_ext/scx_simple.c and .bpf.c of the kernel's source), for
# the debian-7.3 kernel numalab caches, so that it can run in a guest:
#
#   numalab vm --kernel debian-7.3 --fetch-only
#   scripts/build-scx-simple.sh [DIR]      # prints the program's path
#   numalab vm --kernel debian-7.3 ... -- run spin --scx-exec "$(that path)"
#
# The source is Debian's linux-source package of the cached kernel's
# version, found in the package index numalab's private apt verified when
# it fetched the kernel (its SHA256 checked here); only the parts of the
# tree the build needs are unpacked. The kernel's tools/sched_ext
# Makefile builds libbpf from the same tree and the BPF object with
# clang-19 against the kernel's vmlinux.h; skeletons come from bpftool's
# bootstrap build, which needs none of bpftool's optional libraries.
# Needs curl, dpkg-deb, xz, python3, gcc, make, clang-19, libelf-dev and
# zlib1g-dev. DIR defaults to numalab's cache (~/.cache/numalab/scx).
# Once built, it prints the path at once.
set -eu

cache=${XDG_CACHE_HOME:-$HOME/.cache}/numalab
kernels=$cache/kernels
entry=$(ls -d "$kernels"/7.3.*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$entry" ] && [ -f "$entry/numalab-kernel.json" ] || {
    echo "build-scx-simple: no debian-7.3 kernel in $kernels: run numalab vm --kernel debian-7.3 --fetch-only" >&2
    exit 1
}
release=$(basename "$entry")
header=$entry/vmlinux-$release.h
[ -r "$header" ] || { echo "build-scx-simple: no $header (fetch the kernel again)" >&2; exit 1; }
# The version of the cached kernel's packages (linux-bpf-dev's line).
version=$(sed -n 's/.*"linux-bpf-dev \([^ ]*\) .*/\1/p' "$entry/numalab-kernel.json")
[ -n "$version" ] || { echo "build-scx-simple: no version in $entry/numalab-kernel.json" >&2; exit 1; }

dir=$(mkdir -p "${1:-$cache/scx}" && cd "${1:-$cache/scx}" && pwd)
out=$dir/$release
bin=$out/build/bin/scx_simple
if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
fi

major=${release%.*}          # 7.3.4+deb13-amd64 -> 7.3
pkg=linux-source-$major
index=$(ls "$kernels"/apt/lists/*_trixie-backports_main_binary-amd64_Packages)
stanza=$(awk -v p="$pkg" -v v="$version" '
    /^$/ { if (hit) { print block; done = 1; exit } block = ""; hit = 0; name = ""; next }
    { block = block $0 "\n" }
    /^Package: / { name = $2 }
    /^Version: / { if (name == p && $2 == v) hit = 1 }
    END { if (hit && !done) print block }' "$index")
file=$(printf '%s' "$stanza" | sed -n 's/^Filename: //p')
sha=$(printf '%s' "$stanza" | sed -n 's/^SHA256: //p')
[ -n "$file" ] && [ -n "$sha" ] || {
    echo "build-scx-simple: $pkg $version is not in $index" >&2
    exit 1
}

src=$out/src
if [ ! -f "$src/.unpacked" ]; then
    tmp=$out/tmp.$$
    rm -rf "$src" "$tmp"
    mkdir -p "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    echo "build-scx-simple: fetching $pkg $version" >&2
    curl -fsSL --retry 3 -o "$tmp/src.deb" "http://deb.debian.org/debian/$file"
    echo "$sha  $tmp/src.deb" | sha256sum -c --quiet -
    t=$pkg
    dpkg-deb --fsys-tarfile "$tmp/src.deb" | tar -xOf - "./usr/src/$t.tar.xz" | xz -dc |
        tar -x -C "$tmp" "$t/tools/build" "$t/tools/scripts" "$t/tools/include" \
            "$t/tools/arch/x86" "$t/tools/lib/bpf" "$t/tools/bpf/bpftool" \
            "$t/tools/sched_ext" "$t/scripts/bpf_doc.py"
    mv "$tmp/$t" "$src"
    touch "$src/.unpacked"
    rm -rf "$tmp"
    trap - EXIT
fi

echo "build-scx-simple: building scx_simple for $release" >&2
mkdir -p "$out/bpftool"
make -s -j"${JOBS:-1}" -C "$src/tools/bpf/bpftool" OUTPUT="$out/bpftool/" SKIP_CRYPTO=1 bootstrap >&2
make -s -j"${JOBS:-1}" -C "$src/tools/sched_ext" O="$out" CLANG=clang-19 \
    BPFTOOL="$out/bpftool/bootstrap/bpftool" VMLINUX_BTF="$header" VMLINUX_H="$header" \
    scx_simple >&2
[ -x "$bin" ] || { echo "build-scx-simple: the build made no $bin" >&2; exit 1; }
echo "$bin"
