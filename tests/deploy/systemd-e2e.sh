#!/usr/bin/env bash
# End to end on real systemd: boots systemd as PID 1 in a podman container, installs
# this build there (meson install into a DESTDIR, copied in), creates the users with
# systemd-sysusers, enables skill-mcp.socket, and drives MCP sessions through
# `skill-mcp connect` with the official SDK client:
#   - the socket is root:skill-mcp-users 0660; a user outside the group is refused
#   - a member lists, loads, reads a file and runs a confirmed script whose worker
#     runs under a uid of its own with skill-mcp-run's group, no capabilities, no_new_privs and seccomp, while the
#     broker runs as skill-mcp holding exactly CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_SETPCAP
#   - the unit starts without the optional MCP_CONFIRM_SECRET credential (and then a
#     token from one broker is refused by the next); with it in /etc/credstore, a
#     token signed by one broker is honoured by the next one
#   - two connections at once (namespaces auto, then off): one run cannot read another's
#     environ, signal it or read the unit's environment file (which must not be readable
#     by runs: 0640); a SIGKILLed broker leaves no process of its run; a root stdio
#     broker shares the unit's /var/lib/skill-mcp
#   - no door out of the cell: a socket under /run is out of a run's reach with the unit's
#     defaults and with namespaces off (the egress helper's too), its bundle's mode stays,
#     its own socket works
#   - declared egress with the socket-activated helper: a run reaches its declared name
#     (pointed at a server on the container's loopback) and nothing else; the helper runs
#     as a dynamic user, its socket is root:skill-mcp 0660, its exposure is at most 2.0;
#     doctor under the unit's own sandbox reports the network layer on and the helper
#     reachable
# Usage: systemd-e2e.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
# shellcheck source=lib.sh
source "$(realpath "$2")/tests/deploy/lib.sh" "$1" "$2"

require_podman
require_node
ensure_systemd_image

stage=$(mktemp -d)
trap 'rm -rf "${stage}"' EXIT
log "meson install into a DESTDIR"
meson install -C "${build}" --no-rebuild --destdir "${stage}/root" >"${stage}/install.log" 2>&1 ||
  { cat "${stage}/install.log"; fail "meson install failed"; }

start_systemd_container
trap 'podman rm -f -t 0 "${CTR}" >/dev/null 2>&1 || true; rm -rf "${stage}"' EXIT
tar -C "${stage}/root" -c . | podman exec -i "${CTR}" tar -C / -x --no-same-owner --keep-directory-symlink ||
  fail "copying the installed tree into the container failed"

unit=/lib/systemd/system/skill-mcp@.service
bin=$(in_ctr sed -nE 's/^ExecStart=([^ ]+) serve$/\1/p' "${unit}")
envfile=$(in_ctr sed -nE 's/^EnvironmentFile=-(.*)$/\1/p' "${unit}")
[[ -n ${bin} && -n ${envfile} ]] || fail "the installed unit has no ExecStart or EnvironmentFile line"
datadir=$(dirname "$(dirname "${bin}")")/share/skill-mcp/skills
log "installed: ${bin}, configuration ${envfile}, example skills ${datadir}"

# The installed units, at their real paths, verify silently here too.
verify_err=$(in_ctr systemd-analyze verify --man=no /lib/systemd/system/skill-mcp.socket "${unit}" \
  /lib/systemd/system/skill-mcp-egress.socket /lib/systemd/system/skill-mcp-egress.service 2>&1 >/dev/null) || true
[[ -z ${verify_err} ]] || fail "systemd-analyze verify in the container: ${verify_err}"
echo "ok - systemd-analyze verify of the installed units is silent"

in_ctr systemd-sysusers >/dev/null || fail "systemd-sysusers failed"
for u in skill-mcp skill-mcp-run; do
  in_ctr getent passwd "${u}" >/dev/null || fail "systemd-sysusers did not create ${u}"
done
in_ctr getent group skill-mcp-users >/dev/null || fail "systemd-sysusers did not create skill-mcp-users"
echo "ok - sysusers created skill-mcp, skill-mcp-run and skill-mcp-users"
# Under the unit every run has a uid of its own from the default per-run range
# (SKILL_MCP_RUN_UIDS, locks in the unit's StateDirectory=) and skill-mcp-run's group.
run_uid=1879048192-1879113727 run_gid=$(in_ctr id -g skill-mcp-run)
svc_uid=$(in_ctr id -u skill-mcp)

# A probe skill next to the example one; configuration through the shipped env file.
in_ctr mkdir -p /srv/skills
tar -C "${here}" -c probe-skill | podman exec -i "${CTR}" sh -c \
  'tar -C /srv/skills -x --no-same-owner && mv /srv/skills/probe-skill /srv/skills/probe && chmod -R a+rX /srv/skills'
in_ctr sh -c "printf 'SKILLS_DIR=/srv/skills:%s\n' '${datadir}' >>'${envfile}'"

in_ctr useradd -m -G skill-mcp-users alice
in_ctr useradd -m bob
in_ctr systemctl daemon-reload
in_ctr systemctl enable --now skill-mcp.socket >/dev/null 2>&1 || fail "systemctl enable --now skill-mcp.socket failed"
sock=/run/skill-mcp/skill-mcp.sock
perms=$(in_ctr stat -c '%U:%G %a %F' "${sock}" 2>&1) || fail "no socket at ${sock}: ${perms}"
[[ ${perms} == "root:skill-mcp-users 660 socket" ]] || fail "socket is '${perms}', want root:skill-mcp-users 660"
echo "ok - ${sock} is root:skill-mcp-users 0660"

if in_ctr runuser -u bob -- "${bin}" connect </dev/null >/dev/null 2>"${stage}/bob.err"; then
  fail "bob (not in skill-mcp-users) could connect"
fi
grep -q "Permission denied" "${stage}/bob.err" || fail "bob's refusal did not say why: $(cat "${stage}/bob.err")"
echo "ok - a user outside skill-mcp-users is refused: $(head -n 1 "${stage}/bob.err")"

rc=0
# 1. Without the optional credential the unit starts; list, load, file, confirmed run.
inspect="podman exec ${CTR} sh -c 'cat /proc/\$(pgrep -u skill-mcp -x skill-mcp | head -n 1)/status'"
session "$(printf '{"load":"example","file":["example","references/report-fields.md"],"run":{"name":"probe","script":"scripts/status.js"},"inspect":"%s"}' "${inspect//\"/\\\"}")" \
  "{\"skills\":[\"example\",\"probe\"],\"load\":\"example\",\"file\":\"no shell ever saw them\",\"run\":{\"uid\":\"${run_uid}\",\"gid\":\"${run_gid}\",\"boundingEmpty\":true},\"broker\":{\"uid\":\"${svc_uid}\",\"capEff\":\"00000000000001e0\"}}" || rc=1

# 2. Without the credential each broker signs with its own random key, so a token
#    from one connection is refused by the next ...
session '{"run":{"name":"probe","script":"scripts/status.js"},"previewOnly":true}' '{"previewOnly":true}' || rc=1
token=$(node -e 'const r=JSON.parse(require("fs").readFileSync(0,"utf8")); process.stdout.write(r.preview?.json?.confirmToken ?? "")' <"${stage}/report.json")
session "{\"run\":{\"name\":\"probe\",\"script\":\"scripts/status.js\",\"confirmToken\":\"${token}\"}}" \
  '{"rejected":"TOKEN_INVALID"}' || rc=1
# 3. ... and with MCP_CONFIRM_SECRET as a credential, a token outlives its broker.
in_ctr sh -c 'umask 077; mkdir -p /etc/credstore; head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n" >/etc/credstore/MCP_CONFIRM_SECRET'
session '{"run":{"name":"probe","script":"scripts/status.js"},"previewOnly":true}' '{"previewOnly":true}' || rc=1
token=$(node -e 'const r=JSON.parse(require("fs").readFileSync(0,"utf8")); process.stdout.write(r.preview?.json?.confirmToken ?? "")' <"${stage}/report.json")
session "{\"run\":{\"name\":\"probe\",\"script\":\"scripts/status.js\",\"confirmToken\":\"${token}\"}}" \
  "{\"run\":{\"uid\":\"${run_uid}\",\"tokenGiven\":true}}" || rc=1
[[ ${rc} == 0 ]] && echo "ok - a token from one broker is honoured by the next (MCP_CONFIRM_SECRET credential loaded)"
# 4. Python skills where the operator enables them in the shipped env file: status.py,
#    importing its sibling, runs under the unit in the same cell as status.js (a uid of
#    its own, the run-as group, an empty bounding set). Taken out again for what follows.
in_ctr sh -c "printf 'SKILL_MCP_INTERPRETERS=node,python3\nSKILL_MCP_PYTHON3=/usr/bin/python3\n' >>'${envfile}'"
py_rc=0
session '{"run":{"name":"probe","script":"scripts/status.py"}}' \
  "{\"run\":{\"uid\":\"${run_uid}\",\"gid\":\"${run_gid}\",\"boundingEmpty\":true}}" || py_rc=1
in_ctr sed -i '/^SKILL_MCP_INTERPRETERS=/d;/^SKILL_MCP_PYTHON3=/d' "${envfile}"
[[ ${py_rc} == 0 ]] && echo "ok - a python3 script runs under the unit in the run's cell (SKILL_MCP_INTERPRETERS=node,python3)"
[[ ${py_rc} == 0 ]] || rc=1

# 5. Declared egress (the default network mode) with the socket-activated helper, which
#    the broker's unit pulls in (Wants=skill-mcp-egress.socket; not enabled here). A drop-in
#    points api.example.test at a server on the container's loopback (EGRESS_ENV and
#    egress_check, lib.sh): the run reaches it by name through node's own http client,
#    while an undeclared name, the declared name on another port and the server's address
#    as a literal are refused, the receipt says so, and root reaches both ports (the
#    control).
in_ctr mkdir -p /etc/systemd/system/skill-mcp@.service.d
printf '[Service]\n' >"${stage}/egress-test.conf"
printf 'Environment=%s\n' "${EGRESS_ENV[@]}" >>"${stage}/egress-test.conf"
podman exec -i "${CTR}" sh -c 'cat >/etc/systemd/system/skill-mcp@.service.d/egress-test.conf' <"${stage}/egress-test.conf"
in_ctr systemctl daemon-reload
egress_check || rc=1
egress_sock=/run/skill-mcp/egress.sock
perms=$(in_ctr stat -c '%U:%G %a %F' "${egress_sock}" 2>&1) || perms="missing: ${perms}"
if [[ ${perms} == "root:skill-mcp 660 socket" ]]; then
  echo "ok - egress: ${egress_sock} is root:skill-mcp 0660 (the brokers' group; a run's uid is not in it)"
else
  echo "not ok - egress: ${egress_sock} is '${perms}', want root:skill-mcp 660"
  rc=1
fi
helper=$(in_ctr ps -C skill-mcp-egress -o uid=,user= | head -n 1)
read -r helper_uid helper_user <<<"${helper:-0 none}"
# DynamicUser= takes uids from 61184-65519 (systemd.exec(5)).
if ((helper_uid >= 61184 && helper_uid <= 65519)); then
  echo "ok - egress: the socket-activated helper runs as the dynamic user ${helper_user} (uid ${helper_uid})"
else
  echo "not ok - egress: the helper runs as '${helper}', want a dynamic user"
  rc=1
fi
# The installed helper unit as systemd itself rates it (online, its drop-ins included).
exposure=$(in_ctr systemd-analyze security skill-mcp-egress.service 2>&1 | grep 'Overall exposure level' || true)
score=$(sed -nE 's/.*: ([0-9]+\.[0-9]+) .*/\1/p' <<<"${exposure}")
if [[ -n ${score} ]] && awk -v s="${score}" 'BEGIN { exit !(s <= 2.0) }'; then
  echo "ok - egress: ${exposure#→ } (at most 2.0)"
else
  echo "not ok - egress: the helper unit's exposure is '${exposure}', above 2.0"
  rc=1
fi
in_ctr rm /etc/systemd/system/skill-mcp@.service.d/egress-test.conf
in_ctr systemctl daemon-reload

# Doctor under the unit's own sandbox (PrivateNetwork=, the address families, the
# namespaces, the helper's socket): a oneshot copy of the installed unit that runs
# `doctor` instead of `serve` and writes its report to a file; it must exit 0 with the
# network layer on (declared: the run's own network namespace) and the helper reachable.
in_ctr sh -c "sed -e 's#^\(ExecStart=.*\) serve\$#\1 doctor#' -e '/^StandardInput=socket\$/d' \
  -e 's#^StandardOutput=socket\$#StandardOutput=truncate:/run/skill-mcp-doctor.txt#' \
  -e 's#^\[Service\]\$#[Service]\nType=oneshot#' '${unit}' >/etc/systemd/system/skill-mcp-doctor.service"
in_ctr systemctl daemon-reload
unit_doc_rc=0
in_ctr systemctl start skill-mcp-doctor.service 2>"${stage}/unit-doctor.err" || unit_doc_rc=$?
in_ctr cat /run/skill-mcp-doctor.txt >"${stage}/unit-doctor.txt" 2>&1 || true
sed 's/^/    /' "${stage}/unit-doctor.txt"
if [[ ${unit_doc_rc} == 0 ]] && grep -qx '  network: on' "${stage}/unit-doctor.txt" &&
  grep -A1 -x '  network: on' "${stage}/unit-doctor.txt" | grep -q 'SKILL_MCP_NETWORK=declared' &&
  grep -qx 'egress-helper: reachable' "${stage}/unit-doctor.txt"; then
  echo "ok - doctor under the unit exits 0 with the network layer on (declared) and the egress helper reachable"
else
  echo "not ok - doctor under the unit: exit ${unit_doc_rc} ($(cat "${stage}/unit-doctor.err")); want network on (declared), egress-helper reachable"
  rc=1
fi
in_ctr rm /etc/systemd/system/skill-mcp-doctor.service
in_ctr systemctl daemon-reload

# The audit trail in the journal (docs/audit.md): the sessions above ran status.js twice
# and had a token refused once; previews write nothing. Each record names alice's
# connection (SO_PEERCRED of the accepted socket), and neither the secret nor the script's
# output (its /proc/self/status keys) is anywhere in them.
alice_uid=$(in_ctr id -u alice)
secret=$(in_ctr cat /etc/credstore/MCP_CONFIRM_SECRET)
in_ctr journalctl --sync 2>/dev/null || true
in_ctr journalctl --no-pager -o json -t skill-mcp SKILL_MCP_SCRIPT=scripts/status.js \
  >"${stage}/audit.json" 2>/dev/null || true
node "${here}/check-audit.mjs" journal "$(printf '{"outcomes":["ran","refused","ran"],"every":{"SYSLOG_IDENTIFIER":"skill-mcp","SKILL_MCP_SKILL":"probe","SKILL_MCP_PEER_FROM":"socket","SKILL_MCP_PEER_UID":"%s","SKILL_MCP_PEER_USER":"alice","SKILL_MCP_CLIENT_NAME":"skill-mcp-deploy-test","SKILL_MCP_AUDIT_LOST":"0"},"ran":{"SKILL_MCP_RUN_UID":"/^1879[0-9]{6}$/","SKILL_MCP_EXIT_CODE":"0","SKILL_MCP_SCRIPT_SHA256":"/^[0-9a-f]{64}$/","SKILL_MCP_CONFIRM":"token","SKILL_MCP_LAYERS":"/landlock/","SKILL_MCP_INTERPRETER_PATH":"/^\\//"},"absent":["%s","NoNewPrivs"]}' \
  "${alice_uid}" "${secret}")" <"${stage}/audit.json" || rc=1

# Every broker of this run reported every isolation layer on at boot (the journal),
# run-namespaces, fresh-proc, parent-death and landlock included (the unit's defaults).
# network is on: declared (the default), runs in their own network namespace.
# run-cgroup is never on (docs/isolation.md, whole-run limits): off with its reason.
# run-memory is off under the unit: ProtectProc=invisible hides the runs' processes from
# the broker, and the unit's MemoryMax= bounds the connection (docs/isolation.md).
only_opt_in_off='off \[(run-memory \(/proc is mounted with hidepid=invisible \(systemd.s ProtectProc=\) and the broker lacks CAP_SYS_PTRACE, so it cannot read its runs. processes; the unit.s MemoryMax= or the container.s memory limit bounds the connection instead\), )?run-cgroup \(no per-run cgroup: [^]]*\)\]$'
layers=$(in_ctr journalctl --no-pager -o cat _COMM=skill-mcp 2>/dev/null | grep 'isolation:' || true)
if [[ -n ${layers} ]] && ! grep -v -E "${only_opt_in_off}" <<<"${layers}" | grep -q . &&
   ! grep -v -E 'on \[.*run-namespaces, fresh-proc, parent-death, landlock' <<<"${layers}" | grep -q . &&
   ! grep -v -E 'on \[([^]]*, )?network(, [^]]*)?\]' <<<"${layers}" | grep -q .; then
  echo "ok - every broker logged all isolation layers on: $(tail -n 1 <<<"${layers}")"
else
  echo "not ok - a broker under the unit reported a layer off (or none reported):"
  echo "${layers:-<no isolation line in the journal>}"
  rc=1
fi

# The doctor under the unit's identity and capabilities (systemd-run with the same
# User=, AmbientCapabilities= and CapabilityBoundingSet=): exits 0, uid switch on.
doc_rc=0
in_ctr systemd-run --quiet --wait --pipe --property=User=skill-mcp \
  "--property=AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_KILL CAP_SETPCAP" \
  "--property=CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL CAP_SETPCAP" \
  --property=NoNewPrivileges=yes "${bin}" doctor >"${stage}/doctor.txt" 2>&1 || doc_rc=$?
sed 's/^/    /' "${stage}/doctor.txt"
if [[ ${doc_rc} == 0 ]] && grep -q "uid-switch: on" "${stage}/doctor.txt"; then
  echo "ok - skill-mcp doctor as the service user exits 0 with uid-switch on"
else
  echo "not ok - skill-mcp doctor as the service user: exit ${doc_rc}"
  rc=1
fi

# 6. The cell under attack: two connections at once, each with its own broker.
#    The first runs a victim holding a granted secret; the second's run tries to read the
#    victim's /proc/<pid>/environ, to kill it, and to read the operator's environment
#    file. The controls: root in the container sees the victim running with the secret
#    before and after, under another uid. Then the first connection's broker is SIGKILLed
#    mid-run, and no process of the run may be left (ps in the container). Twice: with
#    the unit's defaults (each run in its own pid namespace too), and with
#    SKILL_MCP_NAMESPACES=off, where the run's own uid alone must stop it.
secret="cell-secret-${RANDOM}${RANDOM}"
in_ctr sh -c "printf 'CELL_SECRET=%s\n' '${secret}' >>'${envfile}'"
hostile_probe() {
  local label=$1 mark="victim-$$-${RANDOM}" victim="" vpid vuid attack verdict bpid left
  local plan victim_job find_mark
  plan=$(node -e 'const p=JSON.parse(process.argv[1]); p.command=process.argv.slice(2); console.log(JSON.stringify(p))' \
    "{\"run\":{\"name\":\"probe\",\"script\":\"scripts/victim.js\",\"args\":[\"${mark}\"]}}" \
    podman exec -i "${CTR}" runuser -u alice -- "${bin}" connect)
  node "${here}/mcp-session.mjs" "${plan}" >"${stage}/victim.json" 2>&1 &
  victim_job=$!
  # The victim's node as root in the container sees it, "pid uid". The mark is spelt in
  # two pieces so that no command line of the search itself holds it.
  find_mark="index(\$0, \"victim-\" \"${mark#victim-}\")"
  for _ in $(seq 1 100); do
    victim=$(in_ctr sh -c "ps -eo pid=,uid=,args= | awk '${find_mark} && \$2 != 0 { print \$1, \$2 }'")
    [[ -n ${victim} ]] && break
    sleep 0.2
  done
  read -r vpid vuid <<<"${victim:-0 0}"
  holds_secret() { in_ctr sh -c "tr '\\0' '\\n' </proc/${vpid}/environ | grep -qx 'CELL_SECRET=${secret}'"; }
  if [[ ${vpid} == 0 ]] || ! holds_secret; then
    echo "not ok - ${label}: control: the victim never ran with its secret ($(head -c 1500 "${stage}/victim.json"))"
    rc=1
    kill "${victim_job}" 2>/dev/null || true
    wait "${victim_job}" 2>/dev/null || true
    return
  fi
  echo "ok - ${label}: control: the victim runs as pid ${vpid}, uid ${vuid}, with the granted secret in its environ"
  session "{\"run\":{\"name\":\"probe\",\"script\":\"scripts/attack.js\",\"args\":[\"${vpid}\",\"${envfile}\"]}}" '{}' >"${stage}/attack.txt" ||
    { cat "${stage}/attack.txt"; rc=1; }
  attack=$(node -e 'const r=JSON.parse(require("fs").readFileSync(0,"utf8")); process.stdout.write(r.receipt?.json?.stdout ?? "")' <"${stage}/report.json")
  verdict=$(node -e '
    const a = JSON.parse(process.argv[1] || "{}"), vuid = Number(process.argv[2]);
    const bad = [];
    if (!Number.isInteger(a.uid) || a.uid === vuid) bad.push(`the attacker ran as uid ${a.uid}, the victim as ${vuid}`);
    if (a.environ === "read" || a.environ === "no-secret") bad.push(`it opened the victim environ (${a.environ})`);
    if (a.kill === "sent") bad.push("it signalled the victim");
    if (a.envFile === "read") bad.push(`it read ${process.argv[3]}`);
    if (!a.environ || !a.kill || !a.envFile) bad.push("it did not report every attempt");
    console.log(bad.join("; "));' "${attack}" "${vuid}" "${envfile}" 2>&1)
  if [[ -z ${verdict} ]] && holds_secret; then
    echo "ok - ${label}: another connection's run could not read the victim's environ, signal it or read ${envfile}: ${attack}"
  else
    echo "not ok - ${label}: the hostile probe: ${verdict:-the victim did not survive the attack} (${attack:-no output}; ${envfile} is $(in_ctr stat -c '%U:%G %a' "${envfile}"))"
    rc=1
  fi
  bpid=$(in_ctr sh -c "p=${vpid}; while [ \"\$p\" -gt 1 ]; do p=\$(ps -o ppid= -p \"\$p\" | tr -d ' '); [ \"\$(ps -o comm= -p \"\$p\")\" = skill-mcp ] && { echo \"\$p\"; break; }; done")
  in_ctr kill -KILL "${bpid:-0}" || true
  left="unchecked"
  for _ in $(seq 1 50); do
    left=$(in_ctr sh -c "ps -eo uid=,pid=,args= | awk '(\$1 >= 1879048192 && \$1 <= 1879113727) || ${find_mark}'")
    [[ -z ${left} ]] && break
    sleep 0.2
  done
  if [[ -n ${bpid} && -z ${left} ]]; then
    echo "ok - ${label}: SIGKILL of the victim's broker (pid ${bpid}) mid-run left no process of the run"
  else
    echo "not ok - ${label}: after SIGKILL of the victim's broker (pid ${bpid:-not found}) these are left:"
    echo "${left}"
    rc=1
  fi
  kill "${victim_job}" 2>/dev/null || true
  wait "${victim_job}" 2>/dev/null || true
}
hostile_probe "the unit's defaults"
in_ctr sh -c "printf 'SKILL_MCP_NAMESPACES=off\n' >>'${envfile}'"
hostile_probe "SKILL_MCP_NAMESPACES=off"
in_ctr sed -i '/^SKILL_MCP_NAMESPACES=off$/d' "${envfile}"

# A root stdio broker (no state directory named) shares the unit's StateDirectory.
in_ctr "${bin}" doctor >"${stage}/root-doctor.txt" 2>&1 || true
if grep -q 'locks in /var/lib/skill-mcp/run-uids' "${stage}/root-doctor.txt"; then
  echo "ok - a root stdio broker takes its run uids from the unit's /var/lib/skill-mcp"
else
  echo "not ok - a root stdio broker's doctor:"
  sed 's/^/    /' "${stage}/root-doctor.txt"
  rc=1
fi

# 7. SKILL_MCP_NAMESPACES=on under the unit, with the drop-in skill-mcp(1) documents:
#    the run gets its own user and mount namespace, so its bounding set is empty too,
#    and the broker's boot line has run-namespaces among the layers on.
in_ctr mkdir -p /etc/systemd/system/skill-mcp@.service.d
podman exec -i "${CTR}" sh -c 'cat >/etc/systemd/system/skill-mcp@.service.d/namespaces.conf' <"${SOURCE_ROOT}/packaging/systemd/namespaces.conf"
in_ctr systemctl daemon-reload
session '{"run":{"name":"probe","script":"scripts/status.js"}}' \
  "{\"run\":{\"uid\":\"${run_uid}\",\"gid\":\"${run_gid}\",\"boundingEmpty\":true}}" || rc=1
last=$(in_ctr journalctl --no-pager -o cat _COMM=skill-mcp 2>/dev/null | grep 'isolation:' | tail -n 1 || true)
if grep -q 'on \[.*run-namespaces, fresh-proc, parent-death, landlock' <<<"${last}" &&
   grep -q -E "${only_opt_in_off}" <<<"${last}"; then
  echo "ok - with the namespaces drop-in every layer is on, run-namespaces included: ${last}"
else
  echo "not ok - with the namespaces drop-in: ${last:-<no isolation line>}"
  rc=1
fi

# 8. No door out of the cell (docs/isolation.md, "Doors out of the cell"): root plants a
#    0777 socket under /run, where daemons' sockets live (and the egress helper's is); a
#    run finds neither with the
#    unit's defaults (its view hides /run) nor with SKILL_MCP_NAMESPACES=off (seccomp
#    refuses every unix socket then), and cannot change its bundle's mode, while its own
#    socket (with a view) and node's pipes work. The control: bob, an ordinary user of the
#    container, connects to it (the listener is live and open to every uid).
in_ctr mkdir -p /run/doors-test
podman exec -d "${CTR}" node -e "const p = process.argv[1];
  require('net').createServer((c) => c.destroy()).listen(p, () => require('fs').chmodSync(p, 0o777));" \
  /run/doors-test/agent.sock
for _ in $(seq 1 50); do in_ctr test -S /run/doors-test/agent.sock && break; sleep 0.1; done
control=$(in_ctr runuser -u bob -- node -e "require('net').connect('/run/doors-test/agent.sock')
  .on('connect', () => { console.log('connected'); process.exit(0); })
  .on('error', (e) => { console.log(e.code); process.exit(0); })" 2>&1)
if [[ ${control} == connected ]]; then
  echo "ok - doors: control: bob connects to /run/doors-test/agent.sock"
else
  echo "not ok - doors: control: bob could not connect to the planted socket (${control})"
  rc=1
fi
doors_ops='{"run":["connect","/run/doors-test/agent.sock"],"helper":["connect","/run/skill-mcp/egress.sock"],"varRun":["connect","/var/run/doors-test/agent.sock"],"bundle":["chmod","/srv/skills/probe/SKILL.md"],"own":["own-socket"],"pipe":["pipe"]}'
doors_run() { # LABEL EXPECTED: one run of scripts/doors.js, its outcomes compared with EXPECTED
  local plan seen verdict
  plan=$(node -e 'console.log(JSON.stringify({run: {name: "probe", script: "scripts/doors.js", args: [process.argv[1]]}}))' "${doors_ops}")
  session "${plan}" '{}' >"${stage}/doors.txt" || { cat "${stage}/doors.txt"; rc=1; }
  seen=$(node -e 'const r=JSON.parse(require("fs").readFileSync(0,"utf8")); process.stdout.write(r.receipt?.json?.stdout ?? "")' <"${stage}/report.json")
  verdict=$(node -e '
    const seen = JSON.parse(process.argv[1] || "{}"), want = JSON.parse(process.argv[2]);
    console.log(Object.entries(want).filter(([k, v]) => seen[k] !== v).map(([k, v]) => `${k}: ${seen[k]}, want ${v}`).join("; "));' \
    "${seen}" "$2" 2>&1)
  if [[ -n ${seen} && -z ${verdict} ]]; then
    echo "ok - doors, $1: ${seen}"
  else
    echo "not ok - doors, $1: ${verdict:-no output} (${seen})"
    rc=1
  fi
}
doors_run "the unit's defaults" '{"run":"ENOENT","helper":"ENOENT","varRun":"ENOENT","bundle":"EROFS","own":"connected","pipe":"changed"}'
in_ctr sh -c "printf 'SKILL_MCP_NAMESPACES=off\n' >>'${envfile}'"
doors_run "SKILL_MCP_NAMESPACES=off" '{"run":"EPERM","helper":"EPERM","varRun":"EPERM","bundle":"EPERM","own":"EPERM","pipe":"changed"}'
in_ctr sed -i '/^SKILL_MCP_NAMESPACES=off$/d' "${envfile}"

echo "elapsed $(($(date +%s) - started)) s"
if [[ ${rc} != 0 ]]; then fail "see the failed checks above"; fi
echo "PASS"
