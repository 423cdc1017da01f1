#!/usr/bin/env bash
# Installs what the deploy tests (suite 'deploy') need on a Debian 12 host, as root.
# Idempotent: packages already present are left alone, and a second run changes nothing.
#   podman buildah runc debootstrap  the container and systemd-in-container tests
#   scdoc                            builds the skill-mcp(1) man page
#   debhelper devscripts lintian     the Debian package test (debhelper provides the
#     fakeroot dpkg-dev                virtual dh-sequence-installsysusers)
#   systemd                          systemd-analyze for the unit checks
#   python3-yaml                     reads mint.yaml in the manifest check
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

if [[ $(id -u) != 0 ]]; then
  echo "prepare-host.sh: run as root (it installs packages with apt-get)" >&2
  exit 1
fi

wanted=(podman buildah runc debootstrap scdoc debhelper devscripts lintian fakeroot dpkg-dev python3-yaml
  systemd)
missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("${p}")
  fi
done
if ((${#missing[@]} > 0)); then
  echo "prepare-host.sh: installing ${missing[*]}"
  # Only update the lists when something has to be installed; CI has already done so.
  apt-get install -y --no-install-recommends "${missing[@]}" || {
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
  }
else
  echo "prepare-host.sh: everything is installed already"
fi
