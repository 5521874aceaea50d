#!/bin/sh
# build.sh builds Caddy from this directory's Go module (go.mod pins Caddy at
# v2.11.9; Caddy's dependencies are in this module's go.mod, never in
# rollcall's), with rollcall's upstream source `dynamic rollcall` and its
# handler rollcall_cohorts (rollcallup/), as a static binary, and the image
# rollcall-caddy:$CADDY_VERSION FROM scratch with examples/Caddyfile in it.
# It checks the module first: gofmt, go vet, the unit tests and, when
# CADDY_STATICCHECK names a staticcheck command, staticcheck. It needs Go and
# the Go module proxy (nothing else is fetched) and, for the image, a docker
# CLI talking to the engine.
#
#   examples/caddy/build.sh                    # binary and image
#   CADDY_NO_IMAGE=1 examples/caddy/build.sh   # the binary only
#   CADDY_STATICCHECK=staticcheck examples/caddy/build.sh   # as .ci/run does
#
# CADDY_VERSION, if set, must be the version go.mod pins (change the pin with
# `go get github.com/caddyserver/caddy/v2@vX.Y.Z && go mod tidy` in here).
# CADDY_WORK is the folder the binary (and the image's build context) goes
# to; without it a throwaway one, removed after the image is built.
#
# Every go command runs with CGO_ENABLED=0 and -trimpath, the static build's
# flags, so vet, staticcheck, the tests and the build share one build cache:
# a cold machine compiles Caddy's dependencies once.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export CGO_ENABLED=0
GOFLAGS="$(go env GOFLAGS) -trimpath -buildvcs=false"
export GOFLAGS

pinned=$(go list -m -f '{{.Version}}' github.com/caddyserver/caddy/v2)
CADDY_VERSION=${CADDY_VERSION:-${pinned#v}}
if [ "v$CADDY_VERSION" != "$pinned" ]; then
	echo "CADDY_VERSION=$CADDY_VERSION, but $here/go.mod pins Caddy $pinned" >&2
	exit 1
fi
IMAGE=${CADDY_IMAGE:-rollcall-caddy:$CADDY_VERSION}
work=${CADDY_WORK:-$(mktemp -d)}
mkdir -p "$work"
if [ -z "${CADDY_WORK:-}" ] && [ -z "${CADDY_NO_IMAGE:-}" ]; then
	trap 'rm -rf "$work"' EXIT # only the image was wanted
fi

unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || { echo "not gofmt-ed: $unformatted" >&2; exit 1; }
go vet ./...
if [ -n "${CADDY_STATICCHECK:-}" ]; then
	$CADDY_STATICCHECK ./...
fi
go test -count=1 ./...
go build -ldflags='-s -w' -o "$work/caddy" .
"$work/caddy" version

if [ -z "${CADDY_NO_IMAGE:-}" ]; then
	cp "$here/../Caddyfile" "$work/Caddyfile"
	"$work/caddy" validate --config "$work/Caddyfile" --adapter caddyfile
	docker build -q -t "$IMAGE" -f "$here/Dockerfile" "$work" >/dev/null
	echo "built $IMAGE"
fi
[ -n "${CADDY_WORK:-}${CADDY_NO_IMAGE:-}" ] && echo "caddy binary: $work/caddy"
exit 0
