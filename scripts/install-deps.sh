#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test homatb:
# Debian's Mininet and network tools, Chromium for the report browser test,
# clang, LLVM, libbpf's headers and bpftool for the BPF congestion controls,
# tshark for the Wireshark dissector's test (docs/dissector.md), munge and
# Slurm's daemons and commands for the Slurm executor's one-node test
# cluster (docs/multi-machine.md), zstd for the scripts that read a run's
# compressed records (scripts/runfiles.py), and the Go modules. Safe to run again: it
# installs only what is missing.
set -euo pipefail

pkgs=(mininet bridge-utils ethtool iproute2 iputils-ping tcpdump iperf3 zstd chromium clang llvm libbpf-dev bpftool tshark munge slurmctld slurmd slurm-client)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 ]]; then
		echo "install-deps: missing Debian packages: ${missing[*]}; run as root: apt-get install ${missing[*]}" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}" >&2
	# wireshark-common asks whether non-root users may capture (a setuid
	# dumpcap); answer no beforehand so the install never prompts.
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
go mod download
