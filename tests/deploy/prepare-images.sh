#!/usr/bin/env bash
# Builds the images the deploy tests share (the debootstrapped base and the systemd
# image, tests/deploy/lib.sh) ahead of the tests, into BUILD_DIR/deploy-cache. .ci/run
# starts it in the background while the project compiles: debootstrap and apt mostly wait
# on the mirror. The tests take the same lock, so one that starts first waits for this
# build and then finds its image there; run by hand it is only a head start. Exits 77 where
# the container tests cannot run, as they do.
# Usage: prepare-images.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
build=$(realpath "$1") SOURCE_ROOT=$(realpath "$2")
DEPLOY_CACHE=${build}/deploy-cache
# shellcheck source=lib.sh
source "${SOURCE_ROOT}/tests/deploy/lib.sh"
started=$(date +%s)
require_podman
ensure_systemd_image
log "images ready in $(($(date +%s) - started)) s: ${BASE_IMAGE}, ${SYSTEMD_IMAGE}"
