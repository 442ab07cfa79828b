#!/usr/bin/env bash
# Build the sandbox image without a registry: assemble a small root file system from this
# machine and `docker import` it.
#
# Why this shape: the image holds the supervisor, a shell and exactly the system libraries
# (found with ldd) that this machine's interpreter and the venv's compiled packages link to.
# The interpreter and the venv themselves are bind-mounted read-only at run time (label
# wmrl.python=host), so a solution in Docker sees the very library versions that
# `wmrl.sandbox.library_versions()` reports, and the image builds in seconds, not minutes.
# Machines that reach a registry build sandbox/Dockerfile, which carries its own Python.
#
# Usage: sandbox/build_offline.sh [IMAGE_TAG]   (default wmrl-sandbox:offline)
set -euo pipefail
TAG="${1:-wmrl-sandbox:offline}"
HERE="$(cd "$(dirname "$0")" && pwd)"
PY="${PYTHON:-$HERE/../.venv/bin/python}"
command -v docker >/dev/null || { echo "build_offline: no docker client" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "build_offline: no docker engine responds" >&2; exit 1; }

ROOT="$(mktemp -d /tmp/wmrl-rootfs.XXXXXX)"
trap 'rm -rf "$ROOT"' EXIT
mkdir -p "$ROOT"/{usr/bin,usr/lib,usr/lib64,etc,tmp,var/tmp,dev/shm,wmrl/work,wmrl/data,wmrl/meta,proc,sys}
ln -s usr/bin "$ROOT/bin"; ln -s usr/lib "$ROOT/lib"; ln -s usr/lib64 "$ROOT/lib64"
chmod 1777 "$ROOT/tmp" "$ROOT/var/tmp"

# Shared libraries of the interpreter, of every compiled extension in the venv, and of the shell.
PREFIX="$("$PY" -c 'import sys; print(sys.base_prefix)')"
VENV="$("$PY" -c 'import sys; print(sys.prefix)')"
EXE="$("$PY" -c 'import os, sys; print(os.path.realpath(sys.executable))')"
{ { echo "$EXE"; echo /bin/sh; find "$PREFIX" "$VENV" -name '*.so*' -type f; } \
    | xargs -r ldd 2>/dev/null || true; } | grep -o '/[^ ]*\.so[^ ]*' | sort -u \
    | grep -v -e "^$PREFIX" -e "^$VENV" > "$ROOT/.libs" || true
while read -r lib; do
    real="$(readlink -f "$lib")"
    mkdir -p "$ROOT$(dirname "$lib")" "$ROOT$(dirname "$real")"
    cp -n "$real" "$ROOT$real"
    [ -e "$ROOT$lib" ] || ln -s "$real" "$ROOT$lib"  # /lib is /usr/lib here: often the same file
done < "$ROOT/.libs"
rm "$ROOT/.libs"
cp /bin/sh "$ROOT/usr/bin/sh"
cp "$HERE/../wmrl/sandbox/runtime/run_solution.py" "$ROOT/wmrl/run_solution.py"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$ROOT/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$ROOT/etc/group"

tar -C "$ROOT" -c . | docker import \
    --change "LABEL wmrl.python=host" --change "WORKDIR /wmrl/work" - "$TAG" >/dev/null
echo "build_offline: built $TAG (interpreter mounted from $PREFIX and $VENV at run time)"
