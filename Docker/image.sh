#!/usr/bin/env bash
# Builds the container image with podman (docker when a working Docker engine is present).
#   Docker/image.sh          make image: localhost/lookout:latest from Docker/Dockerfile
#   Docker/image.sh base     only the base image and the runtime stage (make deps: the test suite's
#                            runtime-only image then builds from the cache, without the network)
# Base images come from a registry when one answers; otherwise they are made here and kept:
# debian:bookworm-slim with debootstrap from the configured Debian mirror, and the Swift builder
# from this machine's toolchain (/opt/swift, or the one on PATH).
# LOOKOUT_IMAGE_REGISTRY=none never asks a registry; LOOKOUT_DEBIAN_MIRROR names the mirror;
# LOOKOUT_BASE_IMAGE names the local base image (default localhost/debian:bookworm-slim).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "image: $*" >&2; }
die() { echo "image: $*" >&2; exit 1; }

ENGINE=""
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  ENGINE=docker
fi

ensure_tools() {
  [ -n "$ENGINE" ] && return
  local missing=""
  command -v podman >/dev/null || missing="$missing podman"
  command -v runc >/dev/null || [ -x /usr/sbin/runc ] || missing="$missing runc"
  command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing="$missing debootstrap"
  if [ -n "$missing" ]; then
    [ "$(id -u)" = 0 ] || die "needs root to install$missing (sudo apt-get install -y$missing), and to build images"
    say "installing$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  fi
  [ "$(id -u)" = 0 ] || die "needs root: rootless podman is not set up on this machine"
  ENGINE=podman
}

# podman on Debian 12 here: crun refuses hybrid cgroups, and raising limits is not permitted.
engine() {
  if [ "$ENGINE" = podman ]; then
    podman --runtime runc "$@"
  else
    docker "$@"
  fi
}

has_image() { engine image exists "$1" 2>/dev/null || engine image inspect "$1" >/dev/null 2>&1; }

# From a registry when one answers within 20 s, else nothing.
pulled() {
  [ "${LOOKOUT_IMAGE_REGISTRY:-}" = none ] && return 1
  timeout 20 "$ENGINE" pull -q "docker.io/library/$1" >/dev/null 2>&1 && echo "docker.io/library/$1"
}

mirror() {
  [ -n "${LOOKOUT_DEBIAN_MIRROR:-}" ] && { echo "$LOOKOUT_DEBIAN_MIRROR"; return; }
  local uri
  uri=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | grep -v security \
        | head -1 | sed -E 's/^URIs: *//; s/^deb +(\[[^]]*\] +)?//; s/ .*//')
  echo "${uri:-http://deb.debian.org/debian}"
}

base_image() {
  local local_name=${LOOKOUT_BASE_IMAGE:-localhost/debian:bookworm-slim}
  if has_image "$local_name"; then say "base: $local_name (made earlier)"; echo "$local_name"; return; fi
  local remote
  if remote=$(pulled debian:bookworm-slim); then say "base: $remote (registry)"; echo "$remote"; return; fi
  local url; url=$(mirror)
  curl -fsS -m 20 -o /dev/null "$url/dists/bookworm/Release" \
    || die "no registry answers and the Debian mirror $url cannot be reached: a base image needs one of them"
  say "base: no registry answers; making $local_name with debootstrap from $url (about a minute)"
  local root; root=$(mktemp -d /var/tmp/lookout-base.XXXXXX)
  debootstrap --variant=minbase bookworm "$root" "$url" >/dev/null || die "debootstrap from $url failed"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | engine import - "$local_name" >/dev/null
  rm -rf "$root"
  echo "$local_name"
}

swift_image() {
  local base=$1 local_name=localhost/swift:6.3-bookworm
  if has_image "$local_name"; then say "builder: $local_name (made earlier)"; echo "$local_name"; return; fi
  local remote
  if remote=$(pulled swift:6.3-bookworm); then say "builder: $remote (registry)"; echo "$remote"; return; fi
  local toolchain=/opt/swift
  [ -x "$toolchain/usr/bin/swift" ] || toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
  [ -x "$toolchain/usr/bin/swift" ] || die "no registry answers and no Swift toolchain is installed here to make the builder from"
  say "builder: no registry answers; making $local_name from $base and the toolchain in $toolchain"
  local context; context=$(mktemp -d /var/tmp/lookout-swift.XXXXXX)
  cp -a "$toolchain" "$context/swift"
  cat > "$context/Containerfile" <<EOF
FROM $base
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      binutils git gnupg2 libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev libpython3-dev libsqlite3-0 \
      libstdc++-12-dev libxml2-dev libncurses-dev libz3-dev pkg-config tzdata zlib1g-dev ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY swift /opt/swift
ENV PATH=/opt/swift/usr/bin:\$PATH
EOF
  engine build --network host -t "$local_name" -f "$context/Containerfile" "$context" >/dev/null
  rm -rf "$context"
  echo "$local_name"
}

ensure_tools
case "${1:-image}" in
  base)
    # The base, and the runtime stage's layers on it (its packages), kept in the engine's cache:
    # the test suite's runtime-only image is then built without the network.
    base=$(base_image)
    extra=()
    [ "$ENGINE" = podman ] && extra=(--network host --format docker)
    engine build "${extra[@]}" --target runtime-base --build-arg "BASE_IMAGE=$base" \
      -f Docker/Dockerfile -t localhost/lookout-runtime-base:latest . >/dev/null \
      || die "the runtime stage did not build on $base"
    echo "$base"
    ;;
  image)
    base=$(base_image)
    builder=$(swift_image "$base")
    # This machine reads GitHub's packages from a local mirror (git's insteadOf); the build sees
    # the same mirror and git configuration, read-only.
    mounts=()
    if [ -d /opt/swift-packages ]; then
      mounts+=(--volume /opt/swift-packages:/opt/swift-packages:ro)
      [ -f /etc/gitconfig ] && mounts+=(--volume /etc/gitconfig:/etc/gitconfig:ro)
      [ -f "$HOME/.gitconfig" ] && mounts+=(--volume "$HOME/.gitconfig:/root/.gitconfig:ro")
    fi
    say "building localhost/lookout:latest with $ENGINE"
    extra=()
    [ "$ENGINE" = podman ] && extra=(--network host --format docker "${mounts[@]}")
    engine build "${extra[@]}" \
      --build-arg "SWIFT_IMAGE=$builder" --build-arg "BASE_IMAGE=$base" \
      -f Docker/Dockerfile -t localhost/lookout:latest . \
      || die "the image build failed (above)"
    say "built localhost/lookout:latest"
    ;;
  *)
    die "usage: Docker/image.sh [image|base]"
    ;;
esac
