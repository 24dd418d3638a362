#!/bin/sh
# Builds the Helm CLI the collection runs - helm v4 as `helm`, helm v3 as `helm3` - from their Go modules into DIR,
# at the versions the test bed runs (tests/sim/build/build.sh; a unit spec keeps the two in step). The execution
# environment runs it in its builder stage (meta/execution-environment.yml): the modules come from the Go module
# proxy, checked against the Go checksum database, so the build needs Go and HTTPS to proxy.golang.org and
# sum.golang.org (or a GOPROXY mirror), nothing else.
#   sh meta/ee-helm.sh DIR
set -eu
HELM4_VERSION=v4.3.2
HELM3_VERSION=v3.21.4
out=$(cd "${1:?usage: ee-helm.sh DIR}" && pwd)
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

# build NAME VERSION MODULE LDFLAGS: MODULE's cmd/helm at VERSION, through a wrapper module that requires it.
build() {
  src=$(mktemp -d)
  (
    cd "$src"
    go mod init "gpuops.local/ee-$1" >/dev/null 2>&1
    go mod edit -require="$3@$2"
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s/cmd/helm"\n' "$3" > tools.go
    go mod tidy 2>tidy.log || { cat tidy.log >&2; exit 1; }
    go build -trimpath -ldflags "-s -w $4" -o "$out/$1" "$3/cmd/helm"
  )
  rm -rf "$src"
  "$out/$1" version --short
}

build helm "$HELM4_VERSION" helm.sh/helm/v4 "-X helm.sh/helm/v4/internal/version.version=$HELM4_VERSION"
build helm3 "$HELM3_VERSION" helm.sh/helm/v3 "-X helm.sh/helm/v3/internal/version.version=$HELM3_VERSION"
