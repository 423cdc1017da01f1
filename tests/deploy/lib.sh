# shellcheck shell=bash
# Shared by the deploy tests (sourced). One debootstrapped base image and one
# systemd image per host, reused across tests and runs; their inputs are cached
# under the build directory (DEPLOY_CACHE). Everything is built locally: no registry.
#
# Sourced with the tests' own arguments, `source lib.sh BUILD_DIR SOURCE_ROOT`: sets build,
# SOURCE_ROOT, here (this folder), DEPLOY_CACHE (a directory under the build dir) and
# started (the test's start, in seconds).
build=$(realpath "$1") SOURCE_ROOT=$(realpath "$2")
here=${SOURCE_ROOT}/tests/deploy
DEPLOY_CACHE=${build}/deploy-cache
# shellcheck disable=SC2034 # the tests read it
started=$(date +%s)

BASE_IMAGE=localhost/bookworm-minbase
# Runtime libraries of the two binaries, node from Debian, and systemd as PID 1.
SYSTEMD_IMAGE_PACKAGES="systemd systemd-sysv dbus nodejs python3 libyaml-cpp0.7 libsodium23 libicu72 libseccomp2 libcap2 libpsl5 util-linux procps"

log() { printf '%s %s\n' "$(date +%T)" "$*"; }
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
require_node() {
  command -v node >/dev/null || skip "node is not installed on the host (it drives the MCP client)"
}

# Exits 77 (meson's skip) with the reason when this host cannot run the container tests.
require_podman() {
  [[ $(id -u) == 0 ]] || skip "the container tests run podman as root; this is uid $(id -u)"
  for tool in podman debootstrap; do
    command -v "${tool}" >/dev/null ||
      skip "${tool} is not installed (run tests/deploy/prepare-host.sh)"
  done
  command -v runc >/dev/null || skip "runc is not installed (crun refuses this host's hybrid cgroup layout; run tests/deploy/prepare-host.sh)"
  mkdir -p "${DEPLOY_CACHE}"
  # runc and cgroupfs (crun refuses the hybrid cgroup layout); explicit ulimits
  # because root here lacks CAP_SYS_RESOURCE to raise them to podman's defaults.
  cat >"${DEPLOY_CACHE}/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
  export CONTAINERS_CONF="${DEPLOY_CACHE}/containers.conf"
  podman info >/dev/null 2>"${DEPLOY_CACHE}/podman-info.err" ||
    skip "podman cannot run here: $(tail -n 1 "${DEPLOY_CACHE}/podman-info.err")"
}

# The apt mirror this host already uses (no other source is contacted).
debian_mirror() {
  local m
  m=$(sed -nE 's/^URIs: *(http[^ ]*\/debian)\/?$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
  [[ -n ${m} ]] || m=$(sed -nE 's/^deb +(\[[^]]*\] +)?(http[^ ]*\/debian)\/? +bookworm .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
  echo "${m:-http://deb.debian.org/debian}"
}

with_lock() { # serialises image builds between concurrent test runs
  exec 9>"${DEPLOY_CACHE}/images.lock"
  flock 9
}

ensure_base_image() {
  with_lock
  if podman image exists "${BASE_IMAGE}"; then return 0; fi
  local tarball="${DEPLOY_CACHE}/bookworm-minbase.tar"
  if [[ ! -s ${tarball} ]]; then
    log "debootstrap --variant=minbase bookworm from $(debian_mirror)"
    local rootfs="${DEPLOY_CACHE}/rootfs"
    rm -rf "${rootfs}"
    debootstrap --variant=minbase bookworm "${rootfs}" "$(debian_mirror)" \
      >"${DEPLOY_CACHE}/debootstrap.log" 2>&1 ||
      fail "debootstrap failed; see ${DEPLOY_CACHE}/debootstrap.log"
    tar -C "${rootfs}" -c . >"${tarball}.part" && mv "${tarball}.part" "${tarball}"
    rm -rf "${rootfs}"
  fi
  log "podman import ${BASE_IMAGE}"
  podman import "${tarball}" "${BASE_IMAGE}" >/dev/null || fail "podman import failed"
}

# localhost/skill-mcp-test-systemd:<hash of its recipe>: the base plus systemd, node
# and the runtime libraries, so the build or the .deb installs without a network.
ensure_systemd_image() {
  ensure_base_image
  local recipe="${DEPLOY_CACHE}/systemd.Containerfile"
  cat >"${recipe}" <<CF
FROM ${BASE_IMAGE}
RUN apt-get update && apt-get install -y --no-install-recommends ${SYSTEMD_IMAGE_PACKAGES} \\
 && apt-get clean && rm -rf /var/lib/apt/lists/*
CF
  SYSTEMD_IMAGE="localhost/skill-mcp-test-systemd:$(sha256sum "${recipe}" | cut -c1-12)"
  if podman image exists "${SYSTEMD_IMAGE}"; then return 0; fi
  log "podman build ${SYSTEMD_IMAGE}"
  podman build --pull=never --network=host -t "${SYSTEMD_IMAGE}" -f "${recipe}" "${DEPLOY_CACHE}" \
    >"${DEPLOY_CACHE}/systemd-image.log" 2>&1 ||
    fail "building the systemd image failed; see ${DEPLOY_CACHE}/systemd-image.log"
}

# The product's own image, built from packaging/container/Containerfile (its build stage
# compiles the project). Under a lock of its own: .ci/run's head start
# (prepare-images.sh) builds it in the background while the tests before the deploy tests
# leave the CPU idle, and the container test's build then finds every layer cached
# (podman's layer cache, keyed on the build context and the instructions).
PRODUCT_IMAGE=localhost/skill-mcp:deploy-test
build_product_image() { # $1: the build's log
  exec 8>"${DEPLOY_CACHE}/product-image.lock"
  flock 8
  local rc=0
  podman build --pull=never --network=host --build-arg BASE="${BASE_IMAGE}" \
    -f "${SOURCE_ROOT}/packaging/container/Containerfile" \
    --ignorefile "${SOURCE_ROOT}/packaging/container/containerignore" \
    -t "${PRODUCT_IMAGE}" "${SOURCE_ROOT}" >"$1" 2>&1 || rc=$?
  exec 8>&-
  return "${rc}"
}

# The Debian package's build (deb.sh): `dpkg-buildpackage -us -uc -b` in a copy of the
# tree with packaging/debian as debian/. Build directories, git data, the tests (the
# package builds with -Dtests=false) and CI's logs stay out of the copy.
DEB_TREE_EXCLUDES=(--exclude='./build' --exclude='./build-*' --exclude=./.git --exclude=./tests
  --exclude=node_modules --no-wildcards-match-slash --exclude='./*.log')
copy_deb_tree() { # $1: a directory; the tree becomes $1/skill-mcp
  mkdir "$1/skill-mcp"
  tar -C "${SOURCE_ROOT}" "${DEB_TREE_EXCLUDES[@]}" -c . | tar -C "$1/skill-mcp" -x
  cp -r "${SOURCE_ROOT}/packaging/debian" "$1/skill-mcp/debian"
}
# What that copy holds (names, modes and contents; not times or owners) and the build's
# options, as a short hash.
deb_tree_key() {
  { tar -C "${SOURCE_ROOT}" "${DEB_TREE_EXCLUDES[@]}" --sort=name --mtime=@0 --owner=0 --group=0 \
      --numeric-owner -c .; echo "DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-}"; } | sha256sum | cut -c1-16
}
build_deb_tree() { # $1: the directory of copy_deb_tree; $2: the build's log
  # parallel: dpkg-buildpackage compiles with one job unless told otherwise.
  (cd "$1/skill-mcp" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -us -uc -b) >"$2" 2>&1
}
# .ci/run's head start builds the package in the background too (prepare-images.sh), into
# DEB_AHEAD/<deb_tree_key>, and says so with SKILL_MCP_DEPLOY_AHEAD=1 (CI's tree does not
# change meanwhile). Then deb.sh takes it, once, when its own tree has the same key, and
# builds it itself otherwise; run by hand (no such variable) it always builds it itself.
# The lock makes deb.sh wait for a build ahead still running.
DEB_AHEAD=${DEPLOY_CACHE}/deb-ahead
lock_deb_ahead() { exec 7>"${DEPLOY_CACHE}/deb-ahead.lock" && flock 7; }
unlock_deb_ahead() { exec 7>&-; }

# Boots real systemd as PID 1 in a fresh container; sets CTR. Removed on exit.
# SYS_PTRACE: PID 1 on a host holds every capability, and systemd needs this one to set up
# PrivateUsers= under ProtectProc=invisible (the egress helper's unit): without it the
# unit fails at step USER here, where it would start on a host.
start_systemd_container() {
  CTR="skill-mcp-deploy-$$-${RANDOM}"
  podman run -d --name "${CTR}" --systemd=always --cap-add SYS_ADMIN --cap-add SYS_PTRACE "${SYSTEMD_IMAGE}" \
    /bin/sh -c 'mount --make-rshared / && exec /lib/systemd/systemd' >/dev/null ||
    fail "podman run of the systemd container failed"
  trap 'podman rm -f -t 0 "${CTR}" >/dev/null 2>&1 || true' EXIT
  local state=""
  for _ in $(seq 1 60); do
    state=$(podman exec "${CTR}" systemctl is-system-running 2>/dev/null || true)
    [[ ${state} == running || ${state} == degraded ]] && break
    sleep 0.5
  done
  [[ ${state} == running || ${state} == degraded ]] ||
    fail "systemd in the container did not come up (state '${state}')"
  if [[ ${state} == degraded ]]; then
    log "note: systemd in the container is degraded: $(podman exec "${CTR}" systemctl --failed --no-legend --plain | tr '\n' ';')"
  fi
}

in_ctr() { podman exec "${CTR}" "$@"; }

dump_journal() { in_ctr journalctl --no-pager -o cat -n 60 _COMM=skill-mcp 2>/dev/null || true; }

# One MCP session through the socket as user alice in CTR: `skill-mcp connect`
# spawned by the SDK client (mcp-session.mjs), judged by check-session.mjs.
# $1 plan (JSON without command), $2 expectations. Needs bin (the installed
# skill-mcp), here and stage; the report is left in ${stage}/report.json.
# shellcheck disable=SC2154  # bin, here and stage are the calling test's globals
session() {
  local plan
  plan=$(node -e 'const p=JSON.parse(process.argv[1]); p.command=process.argv.slice(2); console.log(JSON.stringify(p))' \
    "$1" podman exec -i "${CTR}" runuser -u alice -- "${bin}" connect)
  node "${here}/mcp-session.mjs" "${plan}" >"${stage}/report.json" || true
  if ! node "${here}/check-session.mjs" "$2" <"${stage}/report.json"; then
    echo "--- broker journal"
    dump_journal
    return 1
  fi
}

# Declared egress (SKILL_MCP_NETWORK=declared, the default): the probe skill declares
# api.example.test, and the tests point it at a server of their own on the loopback of the
# network the helper uses (SKILL_MCP_EGRESS_RESOLVE, with SKILL_MCP_EGRESS_LOCAL=on since
# loopback is not a global address), allowed on EGRESS_PORT only. The server answers on
# EGRESS_PORT and on EGRESS_OTHER_PORT, so a run's refusals there are the run's own network
# and not a dead server (egress_check's control).
EGRESS_PORT=18080 EGRESS_OTHER_PORT=18081
EGRESS_ENV=(SKILL_MCP_EGRESS_LOCAL=on "SKILL_MCP_EGRESS_ALLOW=api.example.test:${EGRESS_PORT}"
  SKILL_MCP_EGRESS_RESOLVE=api.example.test=127.0.0.1)
EGRESS_SERVER_JS="const http = require('node:http');
for (const port of [${EGRESS_PORT}, ${EGRESS_OTHER_PORT}]) {
  http.createServer((q, r) => r.end('pong ' + q.url)).listen(port, '127.0.0.1', () => console.log('listening', port));
}"
# A node one-liner for `node -e` in the server's network: "connected" when both ports answer.
EGRESS_PROBE_JS="let n = 0;
for (const port of [${EGRESS_PORT}, ${EGRESS_OTHER_PORT}]) {
  require('node:net').connect(port, '127.0.0.1').on('connect', () => { if (++n === 2) { console.log('connected'); process.exit(0); } })
    .on('error', (e) => { console.log(e.code); process.exit(1); });
}"
# What scripts/egress.js tries: the declared name through node's http client, an undeclared
# name, the declared name on a port not allowed, and the server's address as a literal.
EGRESS_OPS="{\"declared\":[\"http\",\"http://api.example.test:${EGRESS_PORT}/ping\"],\"undeclared\":[\"lookup\",\"undeclared.example.test\"],\"otherPort\":[\"tcp\",\"api.example.test:${EGRESS_OTHER_PORT}\"],\"literal\":[\"tcp\",\"127.0.0.1:${EGRESS_OTHER_PORT}\"]}"
EGRESS_EXPECT="{\"willRun\":[{\"host\":\"api.example.test\",\"ports\":[${EGRESS_PORT}]}],\"outcomes\":{\"declared\":\"pong /ping\",\"undeclared\":\"ENOTFOUND\",\"otherPort\":\"ECONNREFUSED\",\"literal\":\"/^(ECONNREFUSED|ENETUNREACH)$/\"},\"hosts\":[{\"host\":\"api.example.test\",\"port\":${EGRESS_PORT}}],\"refused\":[{\"kind\":\"dns\",\"target\":\"undeclared.example.test\"}]}"

# One declared run of scripts/egress.js through an MCP session spawned as COMMAND, judged by
# check-egress.mjs; the report is left in $1. Usage: egress_session REPORT COMMAND...
egress_session() {
  local out=$1 plan
  shift
  plan=$(node -e 'console.log(JSON.stringify({command: process.argv.slice(2),
      run: {name: "probe", script: "scripts/egress.js", args: [process.argv[1]]}}))' "${EGRESS_OPS}" "$@")
  node "${here}/mcp-session.mjs" "${plan}" >"${out}" || true
  node "${here}/check-egress.mjs" "${EGRESS_EXPECT}" <"${out}"
}

# The declared-egress check of the broker installed in CTR, with EGRESS_ENV in its
# configuration: starts the test server in the container and waits until root there
# reaches both its ports (the control: a server that does not answer fails the test), then
# one declared run as alice through `skill-mcp connect` (egress_session; the report in
# ${stage}/egress.json). Returns 1, after the broker's and the helper's journals, when the
# run did not reach its host or reached more.
# shellcheck disable=SC2154  # bin and stage are the calling test's globals
egress_check() {
  podman exec -d "${CTR}" node -e "${EGRESS_SERVER_JS}"
  local control=""
  for _ in $(seq 1 50); do
    control=$(in_ctr node -e "${EGRESS_PROBE_JS}" 2>&1) && break
    sleep 0.1
  done
  [[ ${control} == connected ]] ||
    fail "egress: control: the test server on the container's loopback does not answer (${control})"
  echo "ok - egress: control: root in the container reaches 127.0.0.1:${EGRESS_PORT} and :${EGRESS_OTHER_PORT}"
  if egress_session "${stage}/egress.json" podman exec -i "${CTR}" runuser -u alice -- "${bin}" connect; then
    echo "ok - egress: a declared run reaches its host through the helper, and nothing else"
    return 0
  fi
  echo "--- broker and helper journal"
  dump_journal
  in_ctr journalctl --no-pager -o cat -n 30 -u skill-mcp-egress.service -u skill-mcp-egress.socket 2>/dev/null || true
  return 1
}
