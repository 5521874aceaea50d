#!/usr/bin/env bash
# Build rollcall's release archives: static binaries for linux/amd64 and
# linux/arm64, one tar.gz each, and SHA256SUMS over them.
#
#   scripts/release.sh VERSION [OUTDIR]
#
# VERSION is what `rollcall version` prints (v1.2.3); OUTDIR defaults to
# dist/. Each archive, rollcall_VERSION_linux_ARCH.tar.gz, holds the
# directory rollcall_VERSION_linux_ARCH/ with the binary rollcall, README.md
# and the examples. The binaries are built with CGO_ENABLED=0 (no C library
# needed: they run on any Linux of that architecture, and the demo image
# built from them is the binary alone), -trimpath, and the version and commit
# stamped with -ldflags. Archives are reproducible: entries sorted, owned by
# 0:0, dated at the commit's time.
#
# Why archives and not `go install …@latest`: go.mod replaces Bubble Tea
# with the patched copy in third_party/bubbletea (see its PATCHES.md), and
# `go install pkg@version` refuses a module whose go.mod has a replace.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
  echo "usage: scripts/release.sh VERSION [OUTDIR]" >&2
  exit 2
fi
version=$1
case $version in
  *[!A-Za-z0-9._+-]*) echo "release.sh: VERSION $version: letters, digits, '.', '_', '+' and '-' only" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)

cd "$root"
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  commit="$commit (modified)"
fi
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

archives=()
for arch in amd64 arm64; do
  name=rollcall_${version}_linux_${arch}
  dir=$work/$name
  mkdir -p "$dir"
  echo "building $name"
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath \
    -ldflags "-s -w -X 'main.version=$version' -X 'main.commit=$commit'" \
    -o "$dir/rollcall" ./cmd/rollcall
  cp README.md "$dir/"
  cp -r examples "$dir/"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -C "$work" -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
  archives+=("$name.tar.gz")
done

(cd "$out" && sha256sum "${archives[@]}" >SHA256SUMS)
echo "wrote to $out:"
(cd "$out" && ls -l "${archives[@]}" SHA256SUMS)
