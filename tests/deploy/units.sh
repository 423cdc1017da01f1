#!/usr/bin/env bash
# Checks the configured systemd units from the build directory:
#   verify    `systemd-analyze verify` with NOTHING on stderr (it exits 0 on unknown
#             keys and bad values, so stderr is the real verdict)
#   security  `systemd-analyze security --offline=true` exposure at or under MAX
# Usage: units.sh verify|security UNITDIR SKILL_MCP_BIN [MAN_PAGE]
# verify needs the ExecStart binary to exist, so the units are copied to a scratch
# directory with ExecStart pointing at the built binary (only that path changes),
# and MANPATH points at the built man page so Documentation=man:skill-mcp(1) is
# checked for real.
set -euo pipefail

mode=$1 unitdir=$2 bin=$3 man=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
max_exposure=2.0
# The network drop-in's own goal: the run's namespaces the unit allows (user mnt pid ipc,
# @mount; they isolate every run from the others) cost the broker's score 0.7, and the
# network drop-in adds as much on top (1.9 with it before the namespaces).
max_exposure_network=2.6

if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed (tests/deploy/prepare-host.sh installs it)"
  exit 77
fi
[[ -x ${bin} ]] || { echo "FAIL: the broker binary ${bin} has not been built"; exit 1; }

scratch=$(mktemp -d)
trap 'rm -rf "${scratch}"' EXIT
cp "${unitdir}/skill-mcp.socket" "${scratch}/"
sed -E "s#^ExecStart=[^ ]+/skill-mcp #ExecStart=${bin} #" "${unitdir}/skill-mcp@.service" \
  >"${scratch}/skill-mcp@.service"
grep -q "^ExecStart=${bin} serve$" "${scratch}/skill-mcp@.service" || {
  echo "FAIL: could not find the ExecStart=.../skill-mcp serve line to point at the build"
  exit 1
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
      >"${scratch}/out" 2>"${scratch}/err" || rc=$?
    cat "${scratch}/out"
    if [[ -s ${scratch}/err || ${rc} != 0 ]]; then
      echo "FAIL: systemd-analyze verify (exit ${rc}) said:"
      cat "${scratch}/err"
      exit 1
    fi
    echo "PASS: systemd-analyze verify is silent on skill-mcp.socket and skill-mcp@.service"
    ;;
  security)
    cd "${scratch}"
    out=$(systemd-analyze security --offline=true ./skill-mcp@.service 2>&1) || true
    echo "${out}" | grep -E '^✗' || true
    line=$(echo "${out}" | grep -E 'Overall exposure level' || true)
    echo "${line}"
    score=$(echo "${line}" | sed -nE 's/.*: ([0-9]+\.[0-9]+) .*/\1/p')
    if [[ -z ${score} ]]; then
      echo "FAIL: no exposure score in the output:"
      echo "${out}"
      exit 1
    fi
    if ! awk -v s="${score}" -v m="${max_exposure}" 'BEGIN { exit !(s <= m) }'; then
      echo "FAIL: exposure ${score} is above ${max_exposure}"
      exit 1
    fi
    echo "ok - exposure ${score} <= ${max_exposure}"
    # The drop-in skill-mcp(1) documents for scripts that call an API (network on,
    # Internet sockets allowed) must stay within its goal too.
    score_dropin net "the documented network drop-in" "${max_exposure_network}" \
      -e 's/^PrivateNetwork=yes$/PrivateNetwork=no/' \
      -e 's/^RestrictAddressFamilies=AF_UNIX$/RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6/' -- \
      '^PrivateNetwork=no$' '^RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6$'
    # The namespaces drop-in (packaging/systemd/namespaces.conf) allows what the unit
    # already allows (the default, auto): nothing more to score.
    dropin=${here}/../../packaging/systemd/namespaces.conf
    grep -qx 'RestrictNamespaces=user mnt pid ipc' "${dropin}" && grep -qx 'SystemCallFilter=@mount' "${dropin}" ||
      { echo "FAIL: ${dropin} no longer has the lines this check applies"; exit 1; }
    echo "PASS"
    ;;
  *)
    echo "usage: units.sh verify|security UNITDIR SKILL_MCP_BIN [MAN_PAGE]" >&2
    exit 2
    ;;
esac
