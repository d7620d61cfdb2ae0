#!/usr/bin/env bash
# Build the sandbox image with no image registry, once per definition.
#
#   sandbox-image/build.sh [IMAGE]        (default beamclaw-sandbox:latest; FORCE=1 rebuilds)
#
# 1. The base: `debootstrap --variant=minbase --include=python3 bookworm` into a temporary
#    directory (Debian's package archive is the only thing fetched), then
#    `tar -C DIR -c . | docker import - beamclaw-sandbox-base:<hash of that recipe>`.
#    Kept in the engine, so it is made once per recipe (about a minute).
# 2. The image: `docker build` of the Dockerfile FROM that base, labelled with the hash
#    of its definition (the base recipe, Dockerfile and beamclaw_bridge.py). When the
#    image already carries that label nothing is done, so CI pays for a build only when
#    the definition changed.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
IMAGE="${1:-beamclaw-sandbox:latest}"
DOCKER="${DOCKER:-docker}"
SUITE=bookworm
INCLUDE=python3
RECIPE="debootstrap --variant=minbase --include=$INCLUDE $SUITE"

BASE="beamclaw-sandbox-base:$(printf '%s' "$RECIPE" | sha256sum | cut -c1-12)"
DEFINITION="$( { printf '%s\n' "$RECIPE"; cat "$HERE/Dockerfile" "$HERE/beamclaw_bridge.py"; } | sha256sum | cut -c1-16)"

current="$($DOCKER image inspect --format '{{ index .Config.Labels "beamclaw.definition" }}' "$IMAGE" 2>/dev/null || true)"
if [ "$current" = "$DEFINITION" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "$IMAGE is up to date (definition $DEFINITION)"
  exit 0
fi

if ! $DOCKER image inspect "$BASE" >/dev/null 2>&1; then
  if ! command -v debootstrap >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    else
      echo "debootstrap is missing: apt-get install debootstrap (as root), then run this again" >&2
      exit 1
    fi
  fi
  root="$(mktemp -d)"
  trap 'rm -rf "$root"' EXIT
  echo "making the base $BASE: $RECIPE"
  debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$root" >"$root.log" 2>&1 || {
    tail -20 "$root.log" >&2
    exit 1
  }
  rm -f "$root.log"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | $DOCKER import --message "$RECIPE" - "$BASE" >/dev/null
fi

echo "building $IMAGE (definition $DEFINITION) from $BASE"
# The classic builder: BuildKit would want to reach a registry for its frontend.
if ! output="$(DOCKER_BUILDKIT=0 $DOCKER build --build-arg "BASE=$BASE" --label "beamclaw.definition=$DEFINITION" \
    -t "$IMAGE" "$HERE" 2>&1)"; then
  echo "$output" >&2
  exit 1
fi
echo "$IMAGE built (definition $DEFINITION)"
