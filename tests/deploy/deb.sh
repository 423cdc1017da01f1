#!/usr/bin/env bash
# The Debian package: builds it from packaging/debian with `dpkg-buildpackage -us -uc
# -b` in a temporary copy of the tree (in CI it takes the one .ci/run's head start built
# from a copy of the same content, lib.sh: DEB_AHEAD), requires lintian to be clean at --fail-on
# warning, then in a container running real systemd: installs it, checks the users
# and group exist, the socket is enabled and listening as root:skill-mcp-users 0660,
# a member of the group gets answers (list, load, file, confirmed run as
# skill-mcp-run), the egress helper's socket is enabled and listening as
# root:skill-mcp 0660 and a declared run reaches its host through the packaged helper,
# then purges it and checks that the units, the enablement, the sockets, /etc/skill-mcp
# and the binaries are gone. The users stay, as Debian
# policy has it for system users (files they own may outlive the package).
# Usage: deb.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
# shellcheck source=lib.sh
source "$(realpath "$2")/tests/deploy/lib.sh" "$1" "$2"

for tool in dpkg-buildpackage dpkg-checkbuilddeps lintian dh; do
  command -v "${tool}" >/dev/null || skip "${tool} is not installed (run tests/deploy/prepare-host.sh)"
done
mkdir -p "${DEPLOY_CACHE}"
stage=$(mktemp -d)
trap 'rm -rf "${stage}"' EXIT

# dpkg-buildpackage writes next to the tree, so the copy sits in its own directory
# (lib.sh: copy_deb_tree, build_deb_tree).
lock_deb_ahead
key=$(deb_tree_key)
if [[ ${SKILL_MCP_DEPLOY_AHEAD:-} == 1 && -e ${DEB_AHEAD}/${key}/complete ]]; then
  # Built in this CI run's head start from a tree of the same content (lib.sh).
  log "taking the package built ahead from this tree (${key}; ${DEPLOY_CACHE}/deb-build-ahead.log)"
  rm "${DEB_AHEAD}/${key}/complete"
  mv "${DEB_AHEAD}/${key}"/* "${stage}/"
  rm -rf "${DEB_AHEAD}"
else
  log "copying the tree and packaging/debian -> debian/"
  copy_deb_tree "${stage}"
  (cd "${stage}/skill-mcp" && dpkg-checkbuilddeps) >"${stage}/deps.log" 2>&1 ||
    skip "build dependencies missing: $(cat "${stage}/deps.log") (run tests/deploy/prepare-host.sh)"
  log "dpkg-buildpackage -us -uc -b"
  if ! build_deb_tree "${stage}" "${DEPLOY_CACHE}/deb-build.log"; then
    tail -n 30 "${DEPLOY_CACHE}/deb-build.log"
    fail "dpkg-buildpackage failed; the whole log is ${DEPLOY_CACHE}/deb-build.log"
  fi
fi
unlock_deb_ahead
deb=$(ls "${stage}"/skill-mcp_*_*.deb)
log "built $(basename "${deb}") in $(($(date +%s) - started)) s"
# libstdc++ and yaml-cpp are linked in (broker/meson.build): the package names their sources.
built_using=$(dpkg-deb -f "${deb}" Built-Using)
[[ ${built_using} =~ ^gcc-[0-9]+\ \(=\ [^,]+\),\ yaml-cpp\ \(=\ [^,]+\)$ ]] ||
  fail "Built-Using is '${built_using}', not exactly the gcc and yaml-cpp sources linked in"
dpkg-deb --fsys-tarfile "${deb}" | tar -xO ./usr/bin/skill-mcp >"${stage}/skill-mcp.bin"
needed=$(readelf -d "${stage}/skill-mcp.bin" | grep NEEDED)
if grep -qE "libyaml-cpp|libstdc\+\+" <<<"${needed}"; then
  fail "/usr/bin/skill-mcp still loads libstdc++ or yaml-cpp as shared libraries: ${needed}"
fi
echo "ok - Built-Using names ${built_using}"

lint_rc=0
lintian --fail-on warning "${stage}"/skill-mcp_*.changes >"${stage}/lintian.txt" 2>&1 || lint_rc=$?
grep -v "running with root privileges" "${stage}/lintian.txt" || true
[[ ${lint_rc} == 0 ]] || fail "lintian --fail-on warning exited ${lint_rc}"
echo "ok - lintian --fail-on warning is clean"

require_podman
require_node
ensure_systemd_image
start_systemd_container
trap 'podman rm -f -t 0 "${CTR}" >/dev/null 2>&1 || true; rm -rf "${stage}"' EXIT

podman cp "${deb}" "${CTR}:/tmp/skill-mcp.deb"
# The image carries every runtime dependency, so dpkg alone installs it offline.
in_ctr dpkg -i /tmp/skill-mcp.deb >"${stage}/install.log" 2>&1 ||
  { cat "${stage}/install.log"; fail "dpkg -i failed"; }
echo "ok - dpkg -i installs the package"

for u in skill-mcp skill-mcp-run; do
  in_ctr getent passwd "${u}" >/dev/null || fail "installing did not create user ${u}"
done
in_ctr getent group skill-mcp-users >/dev/null || fail "installing did not create group skill-mcp-users"
echo "ok - users skill-mcp and skill-mcp-run and group skill-mcp-users exist"
[[ $(in_ctr systemctl is-enabled skill-mcp.socket 2>&1) == enabled ]] || fail "skill-mcp.socket is not enabled"
[[ $(in_ctr systemctl is-active skill-mcp.socket 2>&1) == active ]] ||
  fail "skill-mcp.socket is not active: $(in_ctr systemctl status skill-mcp.socket 2>&1 | tail -n 5)"
sock=/run/skill-mcp/skill-mcp.sock
perms=$(in_ctr stat -c '%U:%G %a %F' "${sock}" 2>&1) || fail "no socket at ${sock}: ${perms}"
[[ ${perms} == "root:skill-mcp-users 660 socket" ]] || fail "socket is '${perms}'"
echo "ok - skill-mcp.socket is enabled and listening on ${sock} (root:skill-mcp-users 0660)"
[[ $(in_ctr systemctl is-enabled skill-mcp-egress.socket 2>&1) == enabled ]] || fail "skill-mcp-egress.socket is not enabled"
[[ $(in_ctr systemctl is-active skill-mcp-egress.socket 2>&1) == active ]] ||
  fail "skill-mcp-egress.socket is not active: $(in_ctr systemctl status skill-mcp-egress.socket 2>&1 | tail -n 5)"
egress_sock=/run/skill-mcp/egress.sock
perms=$(in_ctr stat -c '%U:%G %a %F' "${egress_sock}" 2>&1) || fail "no socket at ${egress_sock}: ${perms}"
[[ ${perms} == "root:skill-mcp 660 socket" ]] || fail "the egress helper's socket is '${perms}'"
in_ctr test -x /usr/libexec/skill-mcp-egress || fail "/usr/libexec/skill-mcp-egress is not installed"
echo "ok - skill-mcp-egress.socket is enabled and listening on ${egress_sock} (root:skill-mcp 0660)"

bin=/usr/bin/skill-mcp
# Under the unit every run has a uid of its own from the default per-run range.
run_uid=1879048192-1879113727
in_ctr mkdir -p /srv/skills
tar -C "${here}" -c probe-skill | podman exec -i "${CTR}" sh -c \
  'tar -C /srv/skills -x --no-same-owner && mv /srv/skills/probe-skill /srv/skills/probe && chmod -R a+rX /srv/skills'
in_ctr sh -c 'echo "SKILLS_DIR=/srv/skills:/usr/share/skill-mcp/skills" >>/etc/skill-mcp/skill-mcp.env'
in_ctr useradd -m -G skill-mcp-users alice
rc=0
session '{"load":"example","file":["example","references/report-fields.md"],"run":{"name":"probe","script":"scripts/status.js"}}' \
  "{\"skills\":[\"example\",\"probe\"],\"load\":\"example\",\"file\":\"no shell ever saw them\",\"run\":{\"uid\":\"${run_uid}\"}}" || rc=1
[[ ${rc} == 0 ]] || fail "the installed package did not answer as expected"
# Declared egress through the packaged helper (lib.sh: EGRESS_ENV, in the operator's
# environment file, and egress_check), to a server on the container's loopback.
printf '%s\n' "${EGRESS_ENV[@]}" | podman exec -i "${CTR}" sh -c 'cat >>/etc/skill-mcp/skill-mcp.env'
egress_check || fail "a declared run did not reach its host through the packaged helper (or reached more)"

in_ctr dpkg --purge skill-mcp >"${stage}/purge.log" 2>&1 || { cat "${stage}/purge.log"; fail "dpkg --purge failed"; }
for path in /lib/systemd/system/skill-mcp.socket /lib/systemd/system/skill-mcp@.service \
  /lib/systemd/system/skill-mcp-egress.socket /lib/systemd/system/skill-mcp-egress.service \
  /etc/systemd/system/sockets.target.wants/skill-mcp.socket \
  /etc/systemd/system/sockets.target.wants/skill-mcp-egress.socket /etc/skill-mcp \
  /usr/bin/skill-mcp /usr/libexec/skill-mcp-worker /usr/libexec/skill-mcp-egress \
  /usr/lib/sysusers.d/skill-mcp.conf "${sock}" "${egress_sock}"; do
  if in_ctr test -e "${path}"; then fail "${path} is still there after purge"; fi
done
for s in skill-mcp.socket skill-mcp-egress.socket skill-mcp-egress.service; do
  state=$(in_ctr systemctl is-active "${s}" 2>&1 || true)
  [[ ${state} != active ]] || fail "${s} is still active after purge"
done
echo "ok - purge removes the units, their enablement, the sockets, /etc/skill-mcp and the binaries"
in_ctr getent passwd skill-mcp >/dev/null ||
  fail "the system user skill-mcp is gone after purge (Debian policy keeps it)"
echo "ok - the system users stay after purge (Debian policy: files they own may remain)"

echo "elapsed $(($(date +%s) - started)) s"
echo "PASS"
