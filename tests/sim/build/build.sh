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
# The real node (profile real-node): its runtime, kubelet and NVIDIA's node programs.
RUNC_VERSION=${RUNC_VERSION:-v1.5.3}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
CTK_VERSION=${CTK_VERSION:-v1.20.2}
DEVICE_PLUGIN_VERSION=${DEVICE_PLUGIN_VERSION:-v0.17.4}

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
  local what=$1 pid ticks=0 rc=0 out n; shift
  out=$(mktemp)
  "$@" >"$out" 2>&1 & pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1; ticks=$((ticks + 1))
    if [ $((ticks % 30)) -eq 0 ]; then
      n=$(grep -c '^go: downloading' "$out" || true)
      log "$what: still running after ${ticks}s$([ "$n" -gt 0 ] && echo " ($n Go modules downloaded)")"; fi
  done
  wait "$pid" || rc=$?
  grep -v '^go: downloading' "$out" >&2 || true
  rm -f "$out"
  return "$rc"
}

# need_k8s: true when a Kubernetes binary must be built (else the ready ones are linked).
need_k8s() {
  local v=$K8S_VERSION
  if given kube-apiserver kube-controller-manager kube-scheduler; then return 1; fi
  if have kube-apiserver "$v" && have kube-controller-manager "$v" && have kube-scheduler "$v"; then
    link kube-apiserver "$v"; link kube-controller-manager "$v"; link kube-scheduler "$v"; return 1; fi
}

# prepare_k8s: the wrapper module over k8s.io/kubernetes and its staging modules, tidied (its modules downloaded).
prepare_k8s() {
  local v=$K8S_VERSION
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
}

build_k8s() {
  local v=$K8S_VERSION minor
  log "kubernetes $v"
  cd "$cache/src/k8s-$v"
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
upgrade_controller_src="$here/../upgrade-controller"
upgrade_controller_version() {
  local src=$upgrade_controller_src v
  v=$(awk '$1 == "github.com/NVIDIA/k8s-operator-libs" {print $2; exit}' "$src/go.mod")
  echo "$v-$(cat "$src/go.mod" "$src/go.sum" "$src"/*.go | sha256sum | cut -c1-12)"
}
need_upgrade_controller() {
  local v; v=$(upgrade_controller_version)
  if given upgrade-controller; then return 1; fi
  if have upgrade-controller "$v"; then link upgrade-controller "$v"; return 1; fi
}
prepare_upgrade_controller() { cd "$upgrade_controller_src" && go mod download; }
build_upgrade_controller() {
  local src=$upgrade_controller_src v
  v=$(upgrade_controller_version)
  log "upgrade-controller $v"
  (cd "$src" && progress "upgrade-controller: go build" go build -trimpath -ldflags "-s -w" \
    -o "$(key upgrade-controller "$v").tmp" .)
  mv "$(key upgrade-controller "$v").tmp" "$(key upgrade-controller "$v")"; link upgrade-controller "$v"
}

# The kubelet comes from the same wrapper module as the control plane, with its own import added (so the bed's
# three binaries need not be rebuilt when it is first wanted).
need_kubelet() { need_simple kubelet "$K8S_VERSION"; }
prepare_kubelet() {
  prepare_k8s
  if ! grep -q cmd/kubelet tools.go; then
    sed -i 's|^\t_ "k8s.io/kubernetes/cmd/kube-scheduler"|&\n\t_ "k8s.io/kubernetes/cmd/kubelet"|' tools.go
    progress "kubernetes $K8S_VERSION: go mod tidy (kubelet)" go mod tidy
  fi
}
build_kubelet() {
  local v=$K8S_VERSION minor
  minor=$(echo "$v" | cut -d. -f2)
  cd "$cache/src/k8s-$v"
  log "kubelet $v"
  progress "kubelet $v: go build" go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z" -o "$(key kubelet "$v").tmp" k8s.io/kubernetes/cmd/kubelet
  mv "$(key kubelet "$v").tmp" "$(key kubelet "$v")"; link kubelet "$v"
}

# need_multi NAME VERSION MODULE TAGS PACKAGE...: true when one of the PACKAGEs' binaries must be built. The cache
# key carries the build TAGS (runc with seccomp is another binary than runc without).
tagged() { local tags=$2; echo "$1${tags:+-${tags// /+}}"; }
need_multi() {
  local v; v=$(tagged "$2" "$4"); local pkg bins=(); shift 4
  for pkg in "$@"; do bins+=("$(basename "$pkg")"); done
  if given "${bins[@]}"; then return 1; fi
  for pkg in "${bins[@]}"; do have "$pkg" "$v" || return 0; done
  for pkg in "${bins[@]}"; do link "$pkg" "$v"; done
  return 1
}
# prepare_multi NAME VERSION MODULE: a wrapper module requiring MODULE@VERSION (its packages are named at build).
prepare_multi() {
  local name=$1 v=$2 mod=$3
  local src="$cache/src/$name-$v"; mkdir -p "$src"; cd "$src"
  if [ ! -f go.mod ]; then
    go mod init "gpuops.local/${name}build" >/dev/null 2>&1
    progress "$name $v: go get" go get "$mod@$v"
  fi
}
# build_multi NAME VERSION MODULE TAGS PACKAGE...: each PACKAGE built (cgo on, build TAGS) into its own binary.
build_multi() {
  local name=$1 version=$2 v tags=$4 pkg b; v=$(tagged "$2" "$4"); shift 4
  log "$name $v"
  if [[ " $tags " == *" seccomp "* ]] && [ ! -f /usr/include/seccomp.h ]; then
    log "$name: seccomp needs libseccomp's headers: apt-get install libseccomp-dev (make real-node-packages)"; exit 1; fi
  cd "$cache/src/$name-$version"
  for pkg in "$@"; do
    b=$(basename "$pkg")
    progress "$b $v: go build" env CGO_ENABLED=1 go build -trimpath -tags "$tags" -ldflags "-s -w" -o "$(key "$b" "$v").tmp" "$pkg"
    mv "$(key "$b" "$v").tmp" "$(key "$b" "$v")"; link "$b" "$v"
  done
}

# need_simple NAME VERSION: true when NAME must be built (else the ready one is linked).
need_simple() {
  if given "$1"; then return 1; fi
  if have "$1" "$2"; then link "$1" "$2"; return 1; fi
}

# prepare_simple NAME VERSION MODULE PACKAGE: a wrapper module requiring MODULE@VERSION, tidied.
prepare_simple() {
  local name=$1 v=$2 mod=$3 pkg=$4
  local src="$cache/src/$name-$v"; mkdir -p "$src"; cd "$src"
  if [ ! -f go.mod ]; then
    go mod init "gpuops.local/${name}build" >/dev/null 2>&1
    go mod edit -require="$mod@$v"
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > tools.go
    progress "$name $v: go mod tidy" go mod tidy
  fi
}

# build_simple NAME VERSION MODULE PACKAGE [LDFLAGS]: the build in the prepared wrapper module.
build_simple() {
  local name=$1 v=$2 pkg=$4 ld=${5:-}
  log "$name $v"
  cd "$cache/src/$name-$v"
  progress "$name $v: go build" go build -trimpath -ldflags "-s -w $ld" -o "$(key "$name" "$v").tmp" "$pkg"
  mv "$(key "$name" "$v").tmp" "$(key "$name" "$v")"; link "$name" "$v"
}

# component STEP NAME: STEP (need, prepare or build) of component NAME.
component() {
  local step=$1
  case $2 in
    etcd) "${step}_simple" etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 ;;
    kwok) "${step}_simple" kwok "$KWOK_VERSION" sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok \
            "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" ;;
    helm4) "${step}_simple" helm "$HELM4_VERSION" helm.sh/helm/v4 helm.sh/helm/v4/cmd/helm \
            "-X helm.sh/helm/v4/internal/version.version=$HELM4_VERSION" ;;
    helm3) "${step}_simple" helm3 "$HELM3_VERSION" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm \
            "-X helm.sh/helm/v3/internal/version.version=$HELM3_VERSION -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=36" ;;
    k8s) "${step}_k8s" ;;
    upgrade-controller) "${step}_upgrade_controller" ;;
    kubelet) "${step}_kubelet" ;;
    runc) "${step}_multi" runc "$RUNC_VERSION" github.com/opencontainers/runc seccomp github.com/opencontainers/runc ;;
    containerd) "${step}_multi" containerd "$CONTAINERD_VERSION" github.com/containerd/containerd/v2 "no_btrfs no_devmapper no_zfs" \
            github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr \
            github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 ;;
    container-toolkit) "${step}_multi" container-toolkit "$CTK_VERSION" github.com/NVIDIA/nvidia-container-toolkit "" \
            github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk \
            github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime \
            github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-cdi-hook ;;
    device-plugin) "${step}_multi" device-plugin "$DEVICE_PLUGIN_VERSION" github.com/NVIDIA/k8s-device-plugin "" \
            github.com/NVIDIA/k8s-device-plugin/cmd/nvidia-device-plugin ;;
    *) echo "unknown component '$2' (choose from: etcd kwok helm4 helm3 k8s upgrade-controller $real_node)" >&2; exit 2 ;;
  esac
}

real_node="kubelet runc containerd container-toolkit device-plugin"
want=${*:-etcd kwok helm4 helm3 k8s upgrade-controller $real_node}
# Fetching modules waits on the network, building keeps every core busy: the modules of every component to build
# are fetched at once in the background (go's module cache locks itself), while the builds run one after another.
todo=() prep=()
for c in $want; do
  if component need "$c"; then
    todo+=("$c"); (component prepare "$c") >"$cache/prepare-$c.log" 2>&1 & prep+=($!)
  fi
done
for i in "${!todo[@]}"; do
  c=${todo[$i]}
  if ! wait "${prep[$i]}"; then cat "$cache/prepare-$c.log" >&2; log "$c: fetching its modules failed"; exit 1; fi
  cat "$cache/prepare-$c.log" >&2; rm -f "$cache/prepare-$c.log"
  (component build "$c")
done
log "binaries ready in $bindir"
