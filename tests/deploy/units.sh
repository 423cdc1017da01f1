#!/usr/bin/env bash
# Checks the configured systemd units from the build directory:
#   verify    `systemd-analyze verify` with NOTHING on stderr (it exits 0 on unknown
#             keys and bad values, so stderr is the real verdict)
#   security  `systemd-analyze security --offline=true` exposure at or under MAX
#   The broker's unit (skill-mcp@.service) and the egress helper's
#   (skill-mcp-egress.service), each against its own MAX, both printed.
# Usage: units.sh verify|security UNITDIR SKILL_MCP_BIN EGRESS_BIN [MAN_PAGE]
# verify needs the ExecStart binaries to exist, so the units are copied to a scratch
# directory with ExecStart pointing at the built binaries (only those paths change),
# and MANPATH points at the built man page so Documentation=man:skill-mcp(1) is
# checked for real.
set -euo pipefail

mode=$1 unitdir=$2 bin=$3 egress_bin=$4 man=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
# The broker: the run's namespaces the unit allows (user mnt pid ipc net, @mount; they
# isolate every run from the others) cost its score 0.8, and the Internet sockets each
# run's own loopback needs in the declared network mode 0.3 (2.0 without the two; 1.2
# without the namespaces).
max_exposure=2.3
# The network drop-in's own goal (SKILL_MCP_NETWORK=on with the host's network): the
# broker's score plus the network itself.
max_exposure_network=2.7
# The egress helper: the network is its whole job, and nothing else is allowed.
max_exposure_egress=2.0

if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed (tests/deploy/prepare-host.sh installs it)"
  exit 77
fi
[[ -x ${bin} ]] || { echo "FAIL: the broker binary ${bin} has not been built"; exit 1; }
[[ -x ${egress_bin} ]] || { echo "FAIL: the egress helper ${egress_bin} has not been built"; exit 1; }

scratch=$(mktemp -d)
trap 'rm -rf "${scratch}"' EXIT
cp "${unitdir}/skill-mcp.socket" "${unitdir}/skill-mcp-egress.socket" "${scratch}/"
sed -E "s#^ExecStart=[^ ]+/skill-mcp #ExecStart=${bin} #" "${unitdir}/skill-mcp@.service" \
  >"${scratch}/skill-mcp@.service"
grep -q "^ExecStart=${bin} serve$" "${scratch}/skill-mcp@.service" || {
  echo "FAIL: could not find the ExecStart=.../skill-mcp serve line to point at the build"
  exit 1
}
sed -E "s#^ExecStart=[^ ]+/skill-mcp-egress\$#ExecStart=${egress_bin}#" "${unitdir}/skill-mcp-egress.service" \
  >"${scratch}/skill-mcp-egress.service"
grep -qx "ExecStart=${egress_bin}" "${scratch}/skill-mcp-egress.service" || {
  echo "FAIL: could not find the ExecStart=.../skill-mcp-egress line to point at the build"
  exit 1
}

# The exposure of UNIT in the current directory, its failed checks printed; at or under MAX, or exit 1.
score_unit() { # UNIT MAX
  local out line score
  out=$(systemd-analyze security --offline=true "./$1" 2>&1) || true
  echo "${out}" | grep -E '^✗' || true
  line=$(echo "${out}" | grep -E 'Overall exposure level' || true)
  echo "${line}"
  score=$(echo "${line}" | sed -nE 's/.*: ([0-9]+\.[0-9]+) .*/\1/p')
  if [[ -z ${score} ]]; then
    echo "FAIL: no exposure score for $1 in the output:"
    echo "${out}"
    exit 1
  fi
  if ! awk -v s="${score}" -v m="$2" 'BEGIN { exit !(s <= m) }'; then
    echo "FAIL: $1: exposure ${score} is above $2"
    exit 1
  fi
  echo "ok - $1: exposure ${score} <= $2"
}

# A documented drop-in, applied to a copy of the unit (offline analysis reads no drop-in
# directory) and scored against max_exposure. Run in ${scratch}.
# Usage: score_dropin DIR WHAT MAX SED-ARGS... -- LINE-REGEX...
# Every LINE-REGEX must match exactly one line of the edited copy, so an edit that no
# longer applies (the unit's line changed) fails instead of scoring the unchanged unit.
score_dropin() {
  local dir=$1 what=$2 max=$3
  shift 3
  local sed_args=()
  while [[ $# -gt 0 && $1 != -- ]]; do sed_args+=("$1"); shift; done
  shift
  mkdir "${dir}"
  sed "${sed_args[@]}" skill-mcp@.service >"${dir}/skill-mcp@.service"
  local line
  for line in "$@"; do
    [[ $(grep -c -E -e "${line}" "${dir}/skill-mcp@.service") == 1 ]] ||
      { echo "FAIL: ${what}: the edited unit has no single line matching ${line} (the line it replaces changed?)"; exit 1; }
  done
  local dropin_score
  dropin_score=$(cd "${dir}" && systemd-analyze security --offline=true ./skill-mcp@.service 2>&1 |
    sed -nE 's/.*Overall exposure level.*: ([0-9]+\.[0-9]+) .*/\1/p')
  if [[ -z ${dropin_score} ]] || ! awk -v s="${dropin_score}" -v m="${max}" 'BEGIN { exit !(s <= m) }'; then
    echo "FAIL: with ${what} the exposure is '${dropin_score}', above ${max}"
    exit 1
  fi
  echo "ok - with ${what}: exposure ${dropin_score} <= ${max}"
}

case ${mode} in
  verify)
    man_args=()
    if [[ -n ${man} && -f ${man} ]]; then
      mkdir -p "${scratch}/man/man1"
      cp "${man}" "${scratch}/man/man1/skill-mcp.1"
      export MANPATH="${scratch}/man"
    else
      echo "note: no built man page (scdoc missing): Documentation= is not checked"
      man_args=(--man=no)
    fi
    cd "${scratch}"
    rc=0
    systemd-analyze verify "${man_args[@]}" ./skill-mcp.socket ./skill-mcp@.service \
      ./skill-mcp-egress.socket ./skill-mcp-egress.service \
      >"${scratch}/out" 2>"${scratch}/err" || rc=$?
    cat "${scratch}/out"
    if [[ -s ${scratch}/err || ${rc} != 0 ]]; then
      echo "FAIL: systemd-analyze verify (exit ${rc}) said:"
      cat "${scratch}/err"
      exit 1
    fi
    echo "PASS: systemd-analyze verify is silent on skill-mcp.socket, skill-mcp@.service, skill-mcp-egress.socket and skill-mcp-egress.service"
    ;;
  security)
    cd "${scratch}"
    score_unit skill-mcp@.service "${max_exposure}"
    score_unit skill-mcp-egress.service "${max_exposure_egress}"
    # The egress helper's socket is the brokers' alone: owned by root, group the service
    # user (the broker's User= and Group=), mode 0660; a run's uid is in neither.
    service_user=$(sed -nE 's/^User=(.*)$/\1/p' "${scratch}/skill-mcp@.service")
    for want in SocketUser=root "SocketGroup=${service_user}" SocketMode=0660 \
      ListenSequentialPacket=/run/skill-mcp/egress.sock; do
      grep -qx "${want}" "${scratch}/skill-mcp-egress.socket" ||
        { echo "FAIL: skill-mcp-egress.socket lacks ${want}"; exit 1; }
    done
    grep -qx "Environment=SKILL_MCP_EGRESS_SOCKET=/run/skill-mcp/egress.sock" "${scratch}/skill-mcp@.service" ||
      { echo "FAIL: skill-mcp@.service does not name the egress helper's socket"; exit 1; }
    echo "ok - the egress helper's socket is root:${service_user} 0660, the broker's user and group, and the broker names it"
    # The drop-in skill-mcp(1) documents for scripts that use the host's network as it is
    # (SKILL_MCP_NETWORK=on, no private network) must stay within its goal too.
    score_dropin net "the documented network drop-in" "${max_exposure_network}" \
      -e 's/^PrivateNetwork=yes$/PrivateNetwork=no/' -- '^PrivateNetwork=no$'
    # The namespaces drop-in (packaging/systemd/namespaces.conf) allows what the unit
    # already allows (the default, auto): nothing more to score.
    dropin=${here}/../../packaging/systemd/namespaces.conf
    grep -qx 'RestrictNamespaces=user mnt pid ipc net' "${dropin}" && grep -qx 'SystemCallFilter=@mount' "${dropin}" &&
      grep -qx 'RestrictNamespaces=user mnt pid ipc net' "${scratch}/skill-mcp@.service" ||
      { echo "FAIL: ${dropin} no longer has the lines this check applies"; exit 1; }
    echo "PASS"
    ;;
  *)
    echo "usage: units.sh verify|security UNITDIR SKILL_MCP_BIN EGRESS_BIN [MAN_PAGE]" >&2
    exit 2
    ;;
esac
