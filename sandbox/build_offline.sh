#!/usr/bin/env bash
# Build the sandbox image without a registry: assemble a small root file system from this
# machine and `docker import` it.
#
# Why this shape: the image holds the supervisor, a shell and exactly the system libraries
# (found with ldd) that this machine's interpreter and the venv's compiled packages link to.
# The interpreter and the venv themselves are bind-mounted read-only at run time (label
# wmrl.python=host), so a solution in Docker sees the very library versions that
# `wmrl.sandbox.library_versions()` reports, and the image builds in seconds, not minutes.
# Which image runs where: this one (wmrl-sandbox:offline, the docker backend's default) on machines
# without a registry, CPU or GPU; sandbox/Dockerfile (own Python) on CPU machines that reach a
# registry; sandbox/Dockerfile.cuda (own Python, CUDA torch, torchvision, LightGBM, XGBoost) on GPU
# nodes that reach one, the llm-paper preset's image. In this image a solution imports what the venv
# has, so on a GPU node the venv's own CUDA torch serves the GPU slots.
#
# GPU slots: the NVIDIA Container Toolkit mounts the host driver's libraries into the container and
# registers them by running ldconfig in the container's root, which needs /etc/ld.so.conf and
# /etc/ld.so.conf.d; the image carries this machine's (configuration text only, no data).
#
# Usage: sandbox/build_offline.sh [IMAGE_TAG]   (default wmrl-sandbox:offline)
#        sandbox/build_offline.sh --rootfs DIR   (assemble the root file system in DIR only, no docker)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PY="${PYTHON:-$HERE/../.venv/bin/python}"
if [ "${1:-}" = "--rootfs" ]; then
    [ -n "${2:-}" ] || { echo "build_offline: --rootfs needs a folder" >&2; exit 2; }
    mkdir -p "$2"
    ROOT="$(cd "$2" && pwd)"
else
    TAG="${1:-wmrl-sandbox:offline}"
    command -v docker >/dev/null || { echo "build_offline: no docker client" >&2; exit 1; }
    docker info >/dev/null 2>&1 || { echo "build_offline: no docker engine responds" >&2; exit 1; }
    ROOT="$(mktemp -d /tmp/wmrl-rootfs.XXXXXX)"
    trap 'rm -rf "$ROOT"' EXIT
fi
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
mkdir -p "$ROOT/etc/ld.so.conf.d"
if [ -f /etc/ld.so.conf ]; then cp /etc/ld.so.conf "$ROOT/etc/ld.so.conf"
else printf 'include /etc/ld.so.conf.d/*.conf\n' > "$ROOT/etc/ld.so.conf"; fi
find /etc/ld.so.conf.d -maxdepth 1 -name '*.conf' -type f -exec cp {} "$ROOT/etc/ld.so.conf.d/" \; 2>/dev/null || true
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$ROOT/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$ROOT/etc/group"

if [ -z "${TAG:-}" ]; then echo "build_offline: root file system in $ROOT"; exit 0; fi
tar -C "$ROOT" -c . | docker import \
    --change "LABEL wmrl.python=host" --change "WORKDIR /wmrl/work" - "$TAG" >/dev/null
echo "build_offline: built $TAG (interpreter mounted from $PREFIX and $VENV at run time)"
