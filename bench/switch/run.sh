#!/usr/bin/env bash
# bench/switch/run.sh: the embedded switch target against a kernel Linux
# bridge, in one run, on the same two network namespaces and veth pairs,
# with the same batched UDP sender (sendmmsg) and receiver (recvmmsg).
#
# Measures, for each target: forwarding rate of 64 B and 1500 B frames
# (sender as fast as it can), RTT of 64 B UDP probes when idle and under a
# steady 1500 B load, and, for the switch, its CPU share while idle, with
# and without spin-before-sleep. Prints a table with ratios to the bridge.
#
# Needs root. Environment: DUR (sender time per rate test, default 3s),
# PROBES (default 2000), LOAD_PPS (steady load, default 20000),
# SPIN (spin-before-sleep for the spinning variant, default 50us),
# LINK_RATE (switch port shaping, default 10Gbit so the shaper never limits
# the rate test), SWITCH_PROCS (GOMAXPROCS of the switch process, default
# 1), OUT (keep the raw results here), FWD_ARGS (more swbench fwd flags),
# VARIANTS (default "bridge homatb homatb+spin switch"):
#   bridge       kernel Linux bridge between the two veths
#   homatb       `homatb switch` (tor.p4 pipeline), programmed over P4Runtime
#                by `homatb controller`, as a run uses it
#   switch       the dataplane with a two-port cross-connect pipeline (swbench
#                fwd): the dataplane's own cost without the P4 tables
#   X+spin       X with --spin $SPIN
#   homatb+postcards  homatb recording a per-packet postcard of every frame
#                (--postcards), as a run does during experiments
#   homatb+defences  homatb with every tor.p4 defence on both host ports
#                (ha untrusted, anti-spoofing, queue 0 metered at 10 Gbit/s,
#                which the test never exceeds): each frame takes every
#                defence lookup and the meter
#   X#N          X again, under another name (interleaved repetitions:
#                VARIANTS="homatb homatb+defences homatb#2 homatb+defences#2")
#   bmv2         BMv2's simple_switch_grpc running build/tor.json (make p4c),
#                programmed by `homatb controller` as a run does; in a network
#                namespace of its own (its Thrift server binds every address),
#                P4Runtime on a Unix socket; no queue rate (BMv2 unshaped)
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
	echo "bench/switch: needs root (network namespaces, AF_PACKET)" >&2
	exit 1
fi
export PATH=$PATH:/usr/local/go/bin
DUR=${DUR:-3s}
PROBES=${PROBES:-2000}
LOAD_PPS=${LOAD_PPS:-20000}
SPIN=${SPIN:-50us}
LINK_RATE=${LINK_RATE:-10Gbit}
SWITCH_PROCS=${SWITCH_PROCS:-1}
VARIANTS=${VARIANTS:-bridge homatb homatb+spin switch}

WORK=$(mktemp -d)
BIN=${SWBENCH:-$WORK/swbench} # SWBENCH: use this prebuilt helper
RES=$WORK/results.jsonl
HOMATB=$WORK/homatb
[ -n "${SWBENCH:-}" ] || go build -o "$BIN" ./bench/switch
case " $VARIANTS " in *" homatb"*) go build -o "$HOMATB" ./cmd/homatb ;; esac

TAG=swb$$
NA=${TAG}A NB=${TAG}B NS=${TAG}S VA=${TAG}a VB=${TAG}b BR=${TAG}br
NET=10.198.$(($$ % 250))
IPA=$NET.1 IPB=$NET.2
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	ip link del "$BR" 2>/dev/null || true
	ip link del "$VA" 2>/dev/null || true
	ip link del "$VB" 2>/dev/null || true
	ip netns del "$NA" 2>/dev/null || true
	ip netns del "$NB" 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
	if [ -n "${OUT:-}" ]; then cp "$RES" "$OUT"; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

# Two hosts; offloads off on every end so every frame is one wire packet.
i=0
for side in A B; do
	ns=${TAG}$side v=${TAG}$(echo $side | tr AB ab)
	ip=$NET.$((++i))
	ip netns add "$ns"
	ip link add "$v" type veth peer name "${v}h"
	ip link set "${v}h" netns "$ns"
	ip -n "$ns" link set "${v}h" name eth0
	ip -n "$ns" link set eth0 address "02:5b:00:00:00:0$i"
	ip -n "$ns" addr add "$ip/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
	ip link set "$v" up
	ip netns exec "$ns" ethtool -K eth0 tx off tso off gso off gro off >/dev/null 2>&1 || true
	ethtool -K "$v" tx off tso off gso off gro off >/dev/null 2>&1 || true
	# No IPv6 chatter (router solicitations) during the measurements.
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
done
ip -n "$NA" neigh add "$IPB" lladdr 02:5b:00:00:00:02 dev eth0
ip -n "$NB" neigh add "$IPA" lladdr 02:5b:00:00:00:01 dev eth0

rec() { # target test json
	printf '{"target":"%s","test":"%s","result":%s}\n' "$1" "$2" "$3" >>"$RES"
}

# measure TARGET [SWITCH_PID]
measure() {
	local target=$1 cpupid=${2:-0}
	for size in 64 1500; do
		ip netns exec "$NB" "$BIN" sink --listen "$IPB:9000" --duration 30s >"$WORK/sink" &
		local sink=$!
		sleep 0.3
		rec "$target" "rate$size" "$(ip netns exec "$NA" "$BIN" blast --dst "$IPB:9000" --size "$size" --duration "$DUR")"
		wait "$sink"
		rec "$target" "rate$size" "$(cat "$WORK/sink")"
	done
	ip netns exec "$NB" "$BIN" echo --listen "$IPB:9001" --duration 10m &
	local echo=$!
	sleep 0.3
	rec "$target" idle "$(ip netns exec "$NA" "$BIN" probe --dst "$IPB:9001" --count "$PROBES" --interval 1ms --cpu-pid "$cpupid")"
	ip netns exec "$NB" "$BIN" sink --listen "$IPB:9000" --duration 10m >/dev/null &
	local sink=$!
	ip netns exec "$NA" "$BIN" blast --dst "$IPB:9000" --size 1500 --pps "$LOAD_PPS" --duration 10m >/dev/null &
	local blast=$!
	sleep 0.5
	rec "$target" loaded "$(ip netns exec "$NA" "$BIN" probe --dst "$IPB:9001" --count "$PROBES" --interval 1ms)"
	kill -INT "$blast" "$sink" "$echo" 2>/dev/null || true
	wait "$blast" "$sink" "$echo" 2>/dev/null || true
	echo "bench/switch: $target done" >&2
}

# start_target VARIANT: start the switch process of VARIANT on the veths and
# set SW to its pid.
GRPC=127.0.0.1:$((20000 + $$ % 10000))
start_target() {
	local variant=$1 spin=0 postcards=()
	case $variant in *+spin*) spin=$SPIN ;; esac
	case $variant in *+postcards*) postcards=(--postcards "$WORK/$variant.postcards") ;; esac
	case $variant in
	homatb*)
		GOMAXPROCS=$SWITCH_PROCS "$HOMATB" switch -i "1@$VA" -i "2@$VB" --link-rate "$LINK_RATE" \
			--spin "$spin" --grpc-server-addr "$GRPC" --device-id 1 "${postcards[@]}" \
			--stats-file "$WORK/stats-$variant.json" 2>"$WORK/fwd.log" &
		SW=$!
		PIDS+=("$SW")
		# Program it over P4Runtime like a run does: routes, DSCP policy, ARP.
		local defences=()
		case $variant in *+defences*) defences=(--untrusted ha --anti-spoofing --meter 0:10Gbit:1MB) ;; esac
		"$HOMATB" controller --topology "$WORK/topo.yaml" --dial-timeout 20s "${defences[@]}" >"$WORK/ctl.log" 2>&1 ||
			{ cat "$WORK/ctl.log" "$WORK/fwd.log" >&2; exit 1; }
		;;
	bmv2)
		# The veths move into the switch's namespace for this variant and
		# back after it (stop_target).
		ip netns add "$NS"
		ip -n "$NS" link set lo up
		ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		for v in "$VA" "$VB"; do
			ip link set "$v" netns "$NS"
			ip -n "$NS" link set "$v" up
		done
		ip netns exec "$NS" simple_switch_grpc -i "1@$VA" -i "2@$VB" --device-id 1 --thrift-port 9090 \
			--notifications-addr "ipc://$WORK/bmv2-notify.ipc" build/tor.json -- \
			--grpc-server-addr "unix:$WORK/bmv2.sock" --priority-queues 8 >"$WORK/fwd.log" 2>&1 &
		SW=$!
		PIDS+=("$SW")
		"$HOMATB" controller --topology "$WORK/topo-bmv2.yaml" --dial-timeout 30s >"$WORK/ctl.log" 2>&1 ||
			{ cat "$WORK/ctl.log" "$WORK/fwd.log" >&2; exit 1; }
		;;
	*)
		GOMAXPROCS=$SWITCH_PROCS "$BIN" fwd -i "1@$VA" -i "2@$VB" --link-rate "$LINK_RATE" --spin "$spin" \
			--stats-file "$WORK/stats-$variant.json" ${FWD_ARGS:-} 2>"$WORK/fwd.log" &
		SW=$!
		PIDS+=("$SW")
		;;
	esac
	sleep 0.5
}

# stop_target VARIANT: stop the switch process started by start_target.
stop_target() {
	local variant=$1
	if [ "$variant" = bmv2 ]; then
		# simple_switch_grpc ignores SIGINT; it keeps no statistics file.
		kill -TERM "$SW"
		wait "$SW" 2>/dev/null || true
		for v in "$VA" "$VB"; do
			ip -n "$NS" link set "$v" netns 1
			ip link set "$v" up
		done
		ip netns del "$NS"
		return
	fi
	kill -INT "$SW"
	wait "$SW" || { cat "$WORK/fwd.log" >&2; exit 1; }
	python3 - "$WORK/stats-$variant.json" <<'PY' >&2 || true
import json, sys
s = json.load(open(sys.argv[1]))
for p in s["ports"]:
    drops = sum(q["drop_pkts"] for q in p["queues"])
    print(f"  port {p['port']}: rx {p['rx_pkts']} tx {p['tx_pkts']} queue drops {drops} kernel drops {p.get('kernel_drops', 0)}")
PY
}

cat >"$WORK/topo.yaml" <<YAML
switches:
  - {name: s1, device_id: 1, address: "$GRPC", ports: [1, 2]}
hosts:
  - {name: ha, ip: $IPA, mac: "02:5b:00:00:00:01", switch: s1, port: 1}
  - {name: hb, ip: $IPB, mac: "02:5b:00:00:00:02", switch: s1, port: 2}
YAML
cat >"$WORK/topo-bmv2.yaml" <<YAML
pipeline: {bmv2_json: build/tor.json}
switches:
  - {name: s1, device_id: 1, address: "unix://$WORK/bmv2.sock", target: bmv2, ports: [1, 2]}
hosts:
  - {name: ha, ip: $IPA, mac: "02:5b:00:00:00:01", switch: s1, port: 1}
  - {name: hb, ip: $IPB, mac: "02:5b:00:00:00:02", switch: s1, port: 2}
YAML
case " $VARIANTS " in *" bmv2 "*)
	command -v simple_switch_grpc >/dev/null && [ -f build/tor.json ] ||
		{ echo "bench/switch: the bmv2 variant needs simple_switch_grpc on PATH and build/tor.json (docs/bmv2.md, make p4c)" >&2; exit 1; } ;;
esac

for variant in $VARIANTS; do
	if [ "$variant" = bridge ]; then
		ip link add "$BR" type bridge
		ip link set "$BR" type bridge stp_state 0 forward_delay 0
		ip link set "$VA" master "$BR"
		ip link set "$VB" master "$BR"
		ip link set "$BR" up
		sleep 0.5
		measure bridge
		ip link del "$BR"
		continue
	fi
	start_target "$variant"
	measure "$variant" "$SW"
	stop_target "$variant"
done

echo
echo "bench/switch: $(nproc) vCPUs, kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg), DUR=$DUR PROBES=$PROBES LOAD_PPS=$LOAD_PPS SPIN=$SPIN LINK_RATE=$LINK_RATE SWITCH_PROCS=$SWITCH_PROCS"
"$BIN" report "$RES"
