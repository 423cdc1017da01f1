#!/usr/bin/env bash
# Builds what the deploy tests need ahead of them, into BUILD_DIR/deploy-cache: the
# images they share (the debootstrapped base and the systemd image, tests/deploy/lib.sh),
# then the product's own image (the container test's; its build stage compiles the
# project), then, with SKILL_MCP_DEPLOY_AHEAD=1, the Debian package (deb.sh's). .ci/run
# starts it in the background from the start: debootstrap and apt mostly wait on the
# mirror, and the compiles take the CPU the unit and integration tests leave idle. Each
# build holds a lock the tests take too (lib.sh: fds 9, 8 and 7), so a test that starts
# first waits for it and then finds what it built; run by hand it is only a head start.
# Exits 77 where the container tests cannot run, as they do.
# Usage: prepare-images.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
# shellcheck source=lib.sh
source "$(realpath "$2")/tests/deploy/lib.sh" "$1" "$2"
require_podman
ensure_systemd_image
log "images ready in $(($(date +%s) - started)) s: ${BASE_IMAGE}, ${SYSTEMD_IMAGE}"
exec 9>&- # the shared images are there: the tests that need only them may start
# Then the product's image, whose build stage compiles the project (lib.sh): the
# container test's own build finds its layers cached. Its build stage is kept for that
# test, which removes it once it has built.
if build_product_image "${DEPLOY_CACHE}/container-build-ahead.log"; then
  log "${PRODUCT_IMAGE} built ahead in $(($(date +%s) - started)) s"
else
  log "building ${PRODUCT_IMAGE} ahead failed (${DEPLOY_CACHE}/container-build-ahead.log); the container test builds and reports it"
fi
# And the Debian package, for deb.sh (lib.sh: DEB_AHEAD), where it can be built here.
if [[ ${SKILL_MCP_DEPLOY_AHEAD:-} == 1 ]] && command -v dpkg-buildpackage >/dev/null; then
  lock_deb_ahead
  key=$(deb_tree_key)
  rm -rf "${DEB_AHEAD}"
  mkdir -p "${DEB_AHEAD}/${key}"
  copy_deb_tree "${DEB_AHEAD}/${key}"
  if (cd "${DEB_AHEAD}/${key}/skill-mcp" && dpkg-checkbuilddeps) >/dev/null 2>&1 &&
    build_deb_tree "${DEB_AHEAD}/${key}" "${DEPLOY_CACHE}/deb-build-ahead.log"; then
    rm -rf "${DEB_AHEAD:?}/${key}/skill-mcp"
    log "the Debian package built ahead in $(($(date +%s) - started)) s ($(ls "${DEB_AHEAD}/${key}" | tr '\n' ' '))"
    touch "${DEB_AHEAD}/${key}/complete"
  else
    rm -rf "${DEB_AHEAD}"
    log "building the Debian package ahead failed (${DEPLOY_CACHE}/deb-build-ahead.log); deb.sh builds and reports it"
  fi
  unlock_deb_ahead
fi
