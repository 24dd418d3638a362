#!/usr/bin/env bash
# Build the test bed's pinned binaries from Go modules into a cache outside the repo.
# A binary already in the cache (keyed by component, version, Go version, OS and arch) is not rebuilt.
# GPUOPS_BIN names a directory of ready binaries (plain names: etcd, kube-apiserver, helm, ...; what the test bed
# runs): a binary found there is used as it is, and only the ones it lacks are built (into the cache, linked there).
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.14}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
HELM4_VERSION=${HELM4_VERSION:-v4.3.2}
HELM3_VERSION=${HELM3_VERSION:-v3.21.4}

here=$(cd "$(dirname "$0")" && pwd)
cache=${GPUOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuops}
# Without Go, only binaries that need no build (GPUOPS_BIN) can be used; a build then fails naming go.
goversion=$(go env GOVERSION 2>/dev/null || echo no-go)
platform=$(go env GOOS 2>/dev/null || echo unknown)-$(go env GOARCH 2>/dev/null || echo unknown)
keydir="$cache/bin"            # versioned binaries
bindir=${GPUOPS_BIN:-$keydir}  # plain names the test bed runs
export GOMODCACHE="$cache/gomod" GOCACHE="$cache/gobuild" GOFLAGS=-mod=mod GOTOOLCHAIN=local
mkdir -p "$keydir" "$bindir" "$cache/src"

key() { echo "$keydir/$1-$2-$goversion-$platform"; }
link() { ln -sfn "$(key "$1" "$2")" "$bindir/$1"; }
have() { [ -x "$(key "$1" "$2")" ]; }
# given NAME...: every NAME is a ready binary in GPUOPS_BIN (never true without GPUOPS_BIN: the cache's plain
# names are links that may still point at an older version).
given() {
  [ -n "${GPUOPS_BIN:-}" ] || return 1
  local b; for b in "$@"; do [ -x "$GPUOPS_BIN/$b" ] || return 1; done
  log "$* from GPUOPS_BIN ($GPUOPS_BIN)"
}

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# progress WHAT CMD...: run CMD, saying every 30 s that WHAT is still running (a cold Kubernetes build takes
# many minutes on a small machine and prints nothing meanwhile). Go's `go: downloading` lines (hundreds on a cold
# cache) are folded into a count on those lines; CMD's other output follows when it ends.
progress() {
  local what=$1 pid ticks=0 rc=0 out; shift
  out=$(mktemp)
  "$@" >"$out" 2>&1 & pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1; ticks=$((ticks + 1))
    if [ $((ticks % 30)) -eq 0 ]; then
      log "$what: still running after ${ticks}s ($(grep -c '^go: downloading' "$out") Go modules downloaded)"; fi
  done
  wait "$pid" || rc=$?
  grep -v '^go: downloading' "$out" >&2 || true
  rm -f "$out"
  return "$rc"
}

build_k8s() {
  local v=$K8S_VERSION minor
  if given kube-apiserver kube-controller-manager kube-scheduler; then return; fi
  if have kube-apiserver "$v" && have kube-controller-manager "$v" && have kube-scheduler "$v"; then
    link kube-apiserver "$v"; link kube-controller-manager "$v"; link kube-scheduler "$v"; return; fi
  log "kubernetes $v"
  local src="$cache/src/k8s-$v"; mkdir -p "$src"; cd "$src"
  if [ ! -f go.mod ]; then
    go mod init gpuops.local/k8sbuild >/dev/null 2>&1
    go mod edit -require=k8s.io/kubernetes@"$v"
    local gomod staging
    gomod=$(go mod download -json k8s.io/kubernetes@"$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    staging=$(awk '/=> \.\/staging\/src\//{print $1}' "$gomod" | sort -u)
    [ "$(echo "$staging" | wc -l)" -ge 31 ] || { echo "expected >= 31 staging modules, got: $staging" >&2; exit 1; }
    for m in $staging; do go mod edit -replace="$m=$m@v0${v#v1}"; done
    cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
    progress "kubernetes $v: go mod tidy" go mod tidy
  fi
  minor=$(echo "$v" | cut -d. -f2)
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
  local out; out=$(mktemp -d "$cache/out.XXXX")
  log "kubernetes $v: go build (the longest step; a line every 30 s)"
  progress "kubernetes $v: go build" go build -trimpath -ldflags "$ld" -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
  for b in kube-apiserver kube-controller-manager kube-scheduler; do mv "$out/$b" "$(key $b "$v")"; link $b "$v"; done
  rmdir "$out"
}

# build_upgrade_controller: the bed's driver-upgrade controller (tests/sim/upgrade-controller, our own main over
# NVIDIA's k8s-operator-libs pkg/upgrade at the version its go.mod pins). Keyed by that version and a hash of our
# sources, so an edit rebuilds it.
build_upgrade_controller() {
  local src="$here/../upgrade-controller" v
  if given upgrade-controller; then return; fi
  v=$(awk '$1 == "github.com/NVIDIA/k8s-operator-libs" {print $2; exit}' "$src/go.mod")
  v="$v-$(cat "$src/go.mod" "$src/go.sum" "$src"/*.go | sha256sum | cut -c1-12)"
  if have upgrade-controller "$v"; then link upgrade-controller "$v"; return; fi
  log "upgrade-controller $v"
  (cd "$src" && progress "upgrade-controller: go build" go build -trimpath -ldflags "-s -w" \
    -o "$(key upgrade-controller "$v").tmp" .)
  mv "$(key upgrade-controller "$v").tmp" "$(key upgrade-controller "$v")"; link upgrade-controller "$v"
}

# build_simple NAME VERSION MODULE PACKAGE [LDFLAGS]: a wrapper module requiring MODULE@VERSION.
build_simple() {
  local name=$1 v=$2 mod=$3 pkg=$4 ld=${5:-}
  if given "$name"; then return; fi
  if have "$name" "$v"; then link "$name" "$v"; return; fi
  log "$name $v"
  local src="$cache/src/$name-$v"; mkdir -p "$src"; cd "$src"
  if [ ! -f go.mod ]; then
    go mod init "gpuops.local/${name}build" >/dev/null 2>&1
    go mod edit -require="$mod@$v"
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > tools.go
    progress "$name $v: go mod tidy" go mod tidy
  fi
  progress "$name $v: go build" go build -trimpath -ldflags "-s -w $ld" -o "$(key "$name" "$v").tmp" "$pkg"
  mv "$(key "$name" "$v").tmp" "$(key "$name" "$v")"; link "$name" "$v"
}

want=${*:-etcd kwok helm4 helm3 k8s upgrade-controller}
for c in $want; do
  case $c in
    etcd) build_simple etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 ;;
    kwok) build_simple kwok "$KWOK_VERSION" sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok \
            "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" ;;
    helm4) build_simple helm "$HELM4_VERSION" helm.sh/helm/v4 helm.sh/helm/v4/cmd/helm \
            "-X helm.sh/helm/v4/internal/version.version=$HELM4_VERSION" ;;
    helm3) build_simple helm3 "$HELM3_VERSION" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm \
            "-X helm.sh/helm/v3/internal/version.version=$HELM3_VERSION -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=36" ;;
    k8s) build_k8s ;;
    upgrade-controller) build_upgrade_controller ;;
    *) echo "unknown component '$c' (choose from: etcd kwok helm4 helm3 k8s upgrade-controller)" >&2; exit 2 ;;
  esac
done
log "binaries ready in $bindir"
