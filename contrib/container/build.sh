#!/usr/bin/env bash
# Build the daemon's container image with no image registry, once per definition.
#
#   contrib/container/build.sh [IMAGE]      (default beamclaw:latest; FORCE=1 rebuilds)
#
# As sandbox-image/build.sh does:
# 1. The base: `debootstrap --variant=minbase --include=python3,python3-venv,... bookworm`
#    into a temporary directory (Debian's package archive is fetched), loaded with
#    `docker import` as beamclaw-daemon-base:<hash of that recipe>; made once per recipe.
# 2. A wheelhouse of the dependencies in pyproject.toml, made by this machine's pip
#    (Python 3.11, as Debian bookworm's), kept under ~/.cache per pyproject.toml.
# 3. The image: `docker build` of the Dockerfile FROM that base, labelled with the hash
#    of its definition (the recipe, the Dockerfile, the requirements and the content of
#    the project's files it copies). When the image carries that label, nothing is done,
#    so CI pays for a build only when one of them changed.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
IMAGE="${1:-beamclaw:latest}"
DOCKER="${DOCKER:-docker}"
PYTHON="${PYTHON:-python3}"
SUITE=bookworm
INCLUDE=python3,python3-venv,ca-certificates,libseccomp2
RECIPE="debootstrap --variant=minbase --include=$INCLUDE $SUITE"
#: What the image runs: the project as a checkout runs it (the tests and docs stay out).
SOURCES=(pyproject.toml config.toml supervision apps beamclaw skills sandbox-image)

BASE="beamclaw-daemon-base:$(printf '%s' "$RECIPE" | sha256sum | cut -c1-12)"
REQUIREMENTS="$("$PYTHON" -c 'import sys, tomllib; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))' "$ROOT/pyproject.toml")"

context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
mkdir "$context/src"
(cd "$ROOT" && git ls-files -z -co --exclude-standard -- "${SOURCES[@]}" \
  | while IFS= read -r -d '' file; do [ -f "$file" ] && printf '%s\0' "$file"; done \
  | xargs -0 cp --parents -t "$context/src")
DEFINITION="$( { printf '%s\n%s\n' "$RECIPE" "$REQUIREMENTS"; cat "$HERE/Dockerfile";
  (cd "$context/src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); } | sha256sum | cut -c1-16)"

current="$($DOCKER image inspect --format '{{ index .Config.Labels "beamclaw.definition" }}' "$IMAGE" 2>/dev/null || true)"
if [ "$current" = "$DEFINITION" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "$IMAGE is up to date (definition $DEFINITION)"
  exit 0
fi

python_version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ "$python_version" != 3.11 ]; then
  echo "the wheelhouse is made with this machine's Python, which must be 3.11 as Debian $SUITE's (it is $python_version): set PYTHON" >&2
  exit 1
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
  trap 'rm -rf "$context" "$root"' EXIT
  echo "making the base $BASE: $RECIPE"
  debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$root" >"$root.log" 2>&1 || {
    tail -20 "$root.log" >&2
    rm -rf "$root" "$root.log"
    exit 1
  }
  rm -f "$root.log"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | $DOCKER import --message "$RECIPE" - "$BASE" >/dev/null
  rm -rf "$root"
fi

wheels="${XDG_CACHE_HOME:-$HOME/.cache}/beamclaw-image/wheels-$(printf '%s' "$REQUIREMENTS" | sha256sum | cut -c1-12)"
if [ ! -f "$wheels/requirements.txt" ]; then
  echo "making the wheelhouse $wheels"
  mkdir -p "$wheels"
  printf '%s\n' "$REQUIREMENTS" > "$wheels/requirements.in"
  "$PYTHON" -m pip wheel -q --wheel-dir "$wheels" -r "$wheels/requirements.in"
  mv "$wheels/requirements.in" "$wheels/requirements.txt"
fi

cp "$HERE/Dockerfile" "$context/"
cp -r "$wheels" "$context/wheels"

echo "building $IMAGE (definition $DEFINITION) from $BASE"
# The classic builder: BuildKit would want to reach a registry for its frontend.
if ! output="$(DOCKER_BUILDKIT=0 $DOCKER build --build-arg "BASE=$BASE" --label "beamclaw.definition=$DEFINITION" \
    -t "$IMAGE" "$context" 2>&1)"; then
  echo "$output" >&2
  exit 1
fi
echo "$IMAGE built (definition $DEFINITION)"
