#!/usr/bin/env bash
# The container image: builds packaging/container/Containerfile from the local
# debootstrapped base (podman build --pull=never, no registry), then drives MCP
# sessions through `podman run --rm -i --network none` with the official SDK client,
# the way mcp-host's isolated tier runs it (skills read-only under MCP_SKILLS_PATH, an
# MCP_SKILL_RUN grant, MCP_DATA_DIR mounted):
#   plain        default non-root user: scripts run under the broker's own uid,
#                with no capabilities, no_new_privs and seccomp
#   setid        --cap-add SETUID,SETGID,KILL: scripts run as skill-mcp-run
#   locked       --cap-drop ALL --cap-add SETUID,SETGID,KILL --read-only
#                --security-opt no-new-privileges: the same, on a read-only root
#   root         --user root (podman's default capabilities): the broker switches
#                itself to skill-mcp keeping only SETUID/SETGID/KILL; scripts run under
#                a uid of their own (the container's /var/lib/skill-mcp) with
#                skill-mcp-run's group, their bounding set within those three
#   namespaces   setid plus SKILL_MCP_NAMESPACES=on: each run in its own user and mount
#                namespace under podman's default profile; the bounding set is empty
# and `skill-mcp doctor` in each; a socket the host shares into the container stays out of a
# run's reach with namespaces on and off; declared egress through the helper the broker
# starts itself in the image, over the container's own network (a server in the network
# namespace the container joins): the declared name is reached and nothing else, with
# setid and locked; plus a root start without the setid capabilities, which the doctor must
# report as failing (a demanded uid switch cannot happen).
# Usage: container.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
# shellcheck source=lib.sh
source "$(realpath "$2")/tests/deploy/lib.sh" "$1" "$2"

require_podman
require_node
ensure_base_image

image=${PRODUCT_IMAGE}
log "podman build ${image} (packaging/container/Containerfile)"
# --network=host for the build only: apt-get inside fetches from the host's mirror.
if ! build_product_image "${DEPLOY_CACHE}/container-build.log"; then
  tail -n 30 "${DEPLOY_CACHE}/container-build.log"
  fail "podman build failed; the whole log is ${DEPLOY_CACHE}/container-build.log"
fi
podman image prune -f --filter label=io.github.skill-mcp.stage=build >/dev/null 2>&1 || true
log "built in $(($(date +%s) - started)) s; size $(podman image inspect -f '{{.Size}}' "${image}") bytes"

# The image's contract, read from its config.
entry=$(podman image inspect -f '{{json .Config.Entrypoint}} {{.Config.User}}' "${image}")
[[ ${entry} == '["skill-mcp"] skill-mcp' ]] || fail "entrypoint/user are '${entry}', want [\"skill-mcp\"] skill-mcp"
echo "ok - ENTRYPOINT [\"skill-mcp\"], default user skill-mcp"

scratch=$(mktemp -d)
trap 'rm -rf "${scratch}"' EXIT
mkdir -p "${scratch}/skills"
cp -r "${here}/probe-skill" "${scratch}/skills/probe"
chmod -R a+rX "${scratch}"

# shellcheck disable=SC2054  # the commas are inside --tmpfs options, not separators
hosted=(--network none
  -v "${scratch}/skills:/skills:ro"
  -e MCP_SKILLS_PATH=/skills:/usr/share/skill-mcp/skills
  -e 'MCP_SKILL_RUN=[{"skill":"probe","script":"scripts/status.js"},{"skill":"probe","script":"scripts/doors.js"}]'
  --tmpfs /data:rw,mode=1777 -e MCP_DATA_DIR=/data)
variant_args() {
  case $1 in
    plain) ;;
    setid) echo "--cap-add SETUID,SETGID,KILL" ;;
    locked) echo "--cap-drop ALL --cap-add SETUID,SETGID,KILL --read-only --security-opt no-new-privileges" ;;
    root) echo "--user root" ;;
    namespaces) echo "--cap-add SETUID,SETGID,KILL -e SKILL_MCP_NAMESPACES=on" ;;
  esac
}

rc=0
for variant in plain setid locked root namespaces; do
  # shellcheck disable=SC2207
  extra=($(variant_args "${variant}"))
  uid=10001 gid=10001 bounding='null'
  [[ ${variant} != plain ]] && uid=10002 gid=10002
  # Started as root, the broker makes the container's own /var/lib/skill-mcp before it
  # leaves root, so each run gets a uid of its own from the default range (docs/deployment.md).
  [[ ${variant} == root ]] && uid=1879048192-1879113727
  # A root broker narrows its bounding set to SETUID/SETGID/KILL before it leaves uid 0.
  [[ ${variant} == root ]] && bounding='"00000000000000e0"'
  bounding_check="\"boundingWithin\":${bounding}"
  [[ ${variant} == namespaces ]] && bounding_check='"boundingEmpty":true'
  echo "# ${variant}: podman run --rm -i ${extra[*]} ${image}"
  plan=$(node -e 'console.log(JSON.stringify({command: process.argv.slice(1), load: "example",
      file: ["example", "references/report-fields.md"], run: {name: "probe", script: "scripts/status.js"}}))' \
    podman run --rm -i "${hosted[@]}" "${extra[@]}" "${image}")
  node "${here}/mcp-session.mjs" "${plan}" >"${scratch}/${variant}.json" || true
  node "${here}/check-session.mjs" \
    "{\"skills\":[\"example\",\"probe\"],\"load\":\"example\",\"file\":\"no shell ever saw them\",\"run\":{\"uid\":\"${uid}\",\"gid\":\"${gid}\",\"envNames\":[\"MCP_DATA_DIR\"],${bounding_check}}}" \
    <"${scratch}/${variant}.json" | sed "s/^/${variant}: /" || rc=1
  # The audit trail on the container's stderr (no journal in it, docs/audit.md): the one
  # confirmed run left one marked record, without its output.
  node "${here}/check-audit.mjs" stderr \
    '{"outcomes":["ran"],"every":{"SKILL_MCP_SKILL":"probe","SKILL_MCP_SCRIPT":"scripts/status.js","SKILL_MCP_CLIENT_NAME":"skill-mcp-deploy-test"},"ran":{"SKILL_MCP_EXIT_CODE":"0","SKILL_MCP_CONFIRM":"token"},"absent":["NoNewPrivs"]}' \
    <"${scratch}/${variant}.json" | sed "s/^/${variant}: /" || rc=1

  # The doctor in the same setting: every layer this configuration demands is on.
  doc_rc=0
  podman run --rm "${hosted[@]}" "${extra[@]}" "${image}" doctor >"${scratch}/doctor-${variant}.txt" 2>&1 || doc_rc=$?
  echo "--- skill-mcp doctor (${variant}), exit ${doc_rc}"
  sed 's/^/    /' "${scratch}/doctor-${variant}.txt"
  want_switch=on
  [[ ${variant} == plain ]] && want_switch=off
  # The other variants run with the default, auto: on or off as podman's profile allows,
  # and doctor exits 0 either way (never demanded).
  want_ns='(on|off)'
  [[ ${variant} == namespaces ]] && want_ns=on
  if [[ ${doc_rc} == 0 ]] && grep -q "uid-switch: ${want_switch}" "${scratch}/doctor-${variant}.txt" &&
    grep -Eq "run-namespaces: ${want_ns}" "${scratch}/doctor-${variant}.txt"; then
    echo "ok - ${variant}: doctor exits 0 and reports uid-switch ${want_switch}, run-namespaces ${want_ns}"
  else
    echo "not ok - ${variant}: doctor should exit 0 and report uid-switch ${want_switch}, run-namespaces ${want_ns}"
    rc=1
  fi
done

# Python skills where the operator enables them (docs/configuration.md, "Interpreters"):
# the image's Debian python3 runs status.py, which imports its sibling, in the same cell
# as status.js, with and without the run's namespaces.
hosted_py=(--network none
  -v "${scratch}/skills:/skills:ro"
  -e MCP_SKILLS_PATH=/skills
  -e 'MCP_SKILL_RUN=[{"skill":"probe","script":"scripts/status.py"}]'
  -e SKILL_MCP_INTERPRETERS=node,python3 -e SKILL_MCP_PYTHON3=/usr/bin/python3
  --tmpfs /data:rw,mode=1777 -e MCP_DATA_DIR=/data)
for variant in setid namespaces; do
  # shellcheck disable=SC2207
  extra=($(variant_args "${variant}"))
  bounding_check='"boundingWithin":null'
  [[ ${variant} == namespaces ]] && bounding_check='"boundingEmpty":true'
  plan=$(node -e 'console.log(JSON.stringify({command: process.argv.slice(1),
      run: {name: "probe", script: "scripts/status.py"}}))' \
    podman run --rm -i "${hosted_py[@]}" "${extra[@]}" "${image}")
  node "${here}/mcp-session.mjs" "${plan}" >"${scratch}/python-${variant}.json" || true
  node "${here}/check-session.mjs" \
    "{\"skills\":[\"probe\"],\"run\":{\"uid\":\"10002\",\"gid\":\"10002\",\"envNames\":[\"MCP_DATA_DIR\"],${bounding_check}}}" \
    <"${scratch}/python-${variant}.json" | sed "s/^/python3, ${variant}: /" || rc=1
done

# No door out of the cell (docs/isolation.md, "Doors out of the cell"): a socket the host
# listens on, bind-mounted at /run/agent as a user's agent or a daemon's socket would be
# shared into the container. With namespaces a run's view hides /run; without them seccomp
# refuses every unix socket; the control, with both off, shows the socket is reachable.
mkdir -p "${scratch}/agent"
chmod 755 "${scratch}/agent"
node -e "const p = process.argv[1];
  require('net').createServer((c) => c.destroy()).listen(p, () => require('fs').chmodSync(p, 0o777));" \
  "${scratch}/agent/agent.sock" &
agent_pid=$!
trap 'kill "${agent_pid}" 2>/dev/null || true; rm -rf "${scratch}"' EXIT
for _ in $(seq 1 50); do [[ -S ${scratch}/agent/agent.sock ]] && break; sleep 0.1; done
doors_ops='{"agent":["connect","/run/agent/agent.sock"],"own":["own-socket"],"pipe":["pipe"],"data":["write","/data/doors.txt"]}'
doors_case() { # LABEL EXPECTED PODMAN-ARGS...: one run of scripts/doors.js in the image
  local label=$1 want=$2 plan seen verdict
  shift 2
  plan=$(node -e 'console.log(JSON.stringify({command: process.argv.slice(2),
      run: {name: "probe", script: "scripts/doors.js", args: [process.argv[1]]}}))' \
    "${doors_ops}" podman run --rm -i "${hosted[@]}" -v "${scratch}/agent:/run/agent" "$@" "${image}")
  node "${here}/mcp-session.mjs" "${plan}" >"${scratch}/doors.json" || true
  seen=$(node -e 'const r=JSON.parse(require("fs").readFileSync(0,"utf8")); process.stdout.write(r.receipt?.json?.stdout ?? "")' <"${scratch}/doors.json")
  verdict=$(node -e '
    const seen = JSON.parse(process.argv[1] || "{}"), want = JSON.parse(process.argv[2]);
    console.log(Object.entries(want).filter(([k, v]) => seen[k] !== v).map(([k, v]) => `${k}: ${seen[k]}, want ${v}`).join("; "));' \
    "${seen}" "${want}" 2>&1)
  if [[ -n ${seen} && -z ${verdict} ]]; then
    echo "ok - doors, ${label}: ${seen}"
  else
    echo "not ok - doors, ${label}: ${verdict:-no output} ($(head -c 1500 "${scratch}/doors.json"))"
    rc=1
  fi
}
doors_case "control: namespaces and seccomp off" '{"agent":"connected","own":"connected","pipe":"changed","data":"changed"}' \
  -e SKILL_MCP_NAMESPACES=off -e SKILL_MCP_SECCOMP=off
doors_case "namespaces on" '{"agent":"ENOENT","own":"connected","pipe":"changed","data":"changed"}' \
  --cap-add SETUID,SETGID,KILL -e SKILL_MCP_NAMESPACES=on
doors_case "namespaces off" '{"agent":"EPERM","own":"EPERM","pipe":"changed","data":"changed"}' \
  -e SKILL_MCP_NAMESPACES=off
kill "${agent_pid}" 2>/dev/null || true

# Declared egress (the default network mode) in the image: no SKILL_MCP_EGRESS_SOCKET, so
# the broker starts /usr/libexec/skill-mcp-egress itself, and the helper's connections go
# out through the container's own network. That network here is a server container's
# (--network container:), holding only loopback and the test server (EGRESS_SERVER_JS,
# lib.sh); each run still gets a network namespace of its own inside (unshare in the run's
# user namespace, which podman's default seccomp profile allows).
server="skill-mcp-egress-server-$$"
podman run -d --name "${server}" --network none --entrypoint node "${image}" -e "${EGRESS_SERVER_JS}" >/dev/null ||
  fail "egress: the server container did not start"
trap 'podman rm -f -t 0 "${server}" >/dev/null 2>&1 || true; rm -rf "${scratch}"' EXIT
control=""
for _ in $(seq 1 50); do
  control=$(podman exec "${server}" node -e "${EGRESS_PROBE_JS}" 2>&1) && break
  sleep 0.1
done
[[ ${control} == connected ]] || fail "egress: control: the server does not answer in its own network (${control})"
echo "ok - egress: control: the server answers on 127.0.0.1:${EGRESS_PORT} and :${EGRESS_OTHER_PORT} of the container network"
egress_env=()
for e in "${EGRESS_ENV[@]}"; do egress_env+=(-e "${e}"); done
egress_hosted=(--network "container:${server}"
  -v "${scratch}/skills:/skills:ro"
  -e MCP_SKILLS_PATH=/skills
  -e 'MCP_SKILL_RUN=[{"skill":"probe","script":"scripts/egress.js"}]'
  "${egress_env[@]}")
for variant in setid locked; do
  # shellcheck disable=SC2207
  extra=($(variant_args "${variant}"))
  if egress_session "${scratch}/egress-${variant}.json" podman run --rm -i "${egress_hosted[@]}" "${extra[@]}" "${image}" |
    sed "s/^/egress, ${variant}: /"; then
    echo "ok - egress, ${variant}: a declared run reaches its host through the image's helper, and nothing else"
  else
    echo "not ok - egress, ${variant}: see above"
    rc=1
  fi
  doc_rc=0
  podman run --rm "${egress_hosted[@]}" "${extra[@]}" "${image}" doctor >"${scratch}/doctor-egress-${variant}.txt" 2>&1 || doc_rc=$?
  if [[ ${doc_rc} == 0 ]] && grep -A1 -x '  network: on' "${scratch}/doctor-egress-${variant}.txt" | grep -q 'SKILL_MCP_NETWORK=declared' &&
    grep -qx 'egress-helper: reachable' "${scratch}/doctor-egress-${variant}.txt"; then
    echo "ok - egress, ${variant}: doctor exits 0 with the network layer on (declared) and the helper reachable"
  else
    echo "not ok - egress, ${variant}: doctor (exit ${doc_rc}) should report network on (declared) and egress-helper reachable:"
    sed 's/^/    /' "${scratch}/doctor-egress-${variant}.txt"
    rc=1
  fi
done
podman rm -f -t 0 "${server}" >/dev/null 2>&1 || true

# Started as root without CAP_SETUID/CAP_SETGID the broker cannot leave uid 0: the
# doctor must say so and fail, and serve must refuse rather than run as root.
doc_rc=0
podman run --rm --network none --user root --cap-drop ALL "${image}" doctor >"${scratch}/doctor-root.txt" 2>&1 || doc_rc=$?
echo "--- skill-mcp doctor (root, --cap-drop ALL), exit ${doc_rc}"
sed 's/^/    /' "${scratch}/doctor-root.txt"
if [[ ${doc_rc} == 1 && -s ${scratch}/doctor-root.txt ]] && grep -q "refusing to serve as root" "${scratch}/doctor-root.txt"; then
  echo "ok - root without the setid capabilities: doctor exits 1 and says why"
else
  echo "not ok - root without the setid capabilities: doctor should exit 1 and say why"
  rc=1
fi
serve_rc=0
podman run --rm -i --network none --user root --cap-drop ALL "${image}" </dev/null \
  >"${scratch}/serve-root.out" 2>"${scratch}/serve-root.err" || serve_rc=$?
if [[ ${serve_rc} != 0 && ! -s ${scratch}/serve-root.out ]] &&
  grep -q "refusing to serve as root" "${scratch}/serve-root.err"; then
  echo "ok - root without the setid capabilities: serve refuses (exit ${serve_rc}): $(head -c 200 "${scratch}/serve-root.err")"
else
  echo "not ok - root without the setid capabilities: serve should refuse saying why, got exit ${serve_rc}: $(head -c 300 "${scratch}/serve-root.err")"
  rc=1
fi

# The hostile probe of systemd-e2e.sh (one run reading another's environ, signalling it)
# has no variant between two containers: each container is its own pid namespace with its
# own /proc, so a run in one cannot even name a process of the other; the probe would
# pass without testing anything. Two brokers inside one container are the integration
# tests' case (tests/integration/run_identity.test.mjs).
echo "ok - # SKIP the cross-connection probe between two containers: separate pid namespaces, nothing to address"

echo "elapsed $(($(date +%s) - started)) s"
[[ ${rc} == 0 ]] || fail "see the failed checks above"
echo "PASS"
