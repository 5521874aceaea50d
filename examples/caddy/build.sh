#!/bin/sh
# build.sh builds Caddy from its Go module at a pinned version, with
# rollcall's upstream source `dynamic rollcall` and its handler
# rollcall_cohorts (rollcallup/), as a static binary, and the image
# rollcall-caddy:$CADDY_VERSION FROM scratch with examples/Caddyfile in it. It needs Go and the Go module proxy (nothing else
# is fetched) and, for the image, a docker CLI talking to the engine.
#
#   examples/caddy/build.sh              # binary and image
#   CADDY_NO_IMAGE=1 examples/caddy/build.sh   # the binary only
#
# The module is built in a throwaway directory outside the repository, so
# Caddy's dependencies never enter rollcall's go.mod. Set CADDY_WORK to keep
# that directory (and its go.sum) between runs; the Go module and build
# caches make a second build quick.
set -eu

CADDY_VERSION=${CADDY_VERSION:-2.11.9}
IMAGE=${CADDY_IMAGE:-rollcall-caddy:$CADDY_VERSION}
here=$(cd "$(dirname "$0")" && pwd)
work=${CADDY_WORK:-$(mktemp -d)}
mkdir -p "$work"
if [ -z "${CADDY_WORK:-}" ] && [ -z "${CADDY_NO_IMAGE:-}" ]; then
	trap 'rm -rf "$work"' EXIT # only the image was wanted
fi

cp "$here/main.go.txt" "$work/main.go"
rm -rf "$work/rollcallup" # a file gone from rollcallup/ goes from the build too
mkdir -p "$work/rollcallup"
for f in "$here"/rollcallup/*.go.txt; do
	b=$(basename "$f" .txt)
	cp "$f" "$work/rollcallup/$b"
done
cd "$work"
[ -f go.mod ] || go mod init rollcall.local/caddybuild >/dev/null 2>&1
GOFLAGS=-mod=mod go get "github.com/caddyserver/caddy/v2@v$CADDY_VERSION"
go mod tidy
unformatted=$(gofmt -l main.go rollcallup)
[ -z "$unformatted" ] || { echo "not gofmt-ed: $unformatted" >&2; exit 1; }
go vet ./...
go test -count=1 ./rollcallup
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o caddy .
./caddy version

if [ -z "${CADDY_NO_IMAGE:-}" ]; then
	cp "$here/Dockerfile" Dockerfile
	cp "$here/../Caddyfile" Caddyfile
	./caddy validate --config Caddyfile --adapter caddyfile
	docker build -q -t "$IMAGE" -f Dockerfile . >/dev/null
	echo "built $IMAGE"
fi
[ -n "${CADDY_WORK:-}${CADDY_NO_IMAGE:-}" ] && echo "caddy binary: $work/caddy"
exit 0
