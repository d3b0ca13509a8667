// SPDX-License-Identifier: GPL-2.0
/*
 * homatb_pias: the host side of PIAS (Bai et al., NSDI 2015) as a tc
 * egress program. Each direction of a TCP connection (its 4-tuple as sent)
 * counts the payload bytes it has sent; before a packet leaves, the count so
 * far picks its level in a multi-level feedback queue (level 0, the highest
 * priority, below the first threshold), and the level's DSCP is written into
 * the IPv4 header, keeping the ECN bits, with the header checksum fixed.
 *
 * A SYN starts the count over; so does a data packet after the direction
 * sent no data for longer than the configured idle gap (a new message on a
 * reused connection). Packets without payload (pure ACKs, SYN, FIN, RST)
 * go at level 0: they are small and the other direction waits for them.
 * Anything that is not unfragmented IPv4 TCP passes untouched.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char _license[] SEC("license") = "GPL";

/* #defines of the uapi headers: BTF carries no macros. */
#define TC_ACT_OK 0
#define ETH_P_IP 0x0800
#define ETH_HLEN 14
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

/* At most eight levels: the switch has eight queues per port. */
#define MAX_LEVELS 8

/* pias_config is the one entry of the settings map, written from Go. */
struct pias_config {
	u32 levels;             /* 1..MAX_LEVELS; 0 leaves every packet alone */
	u32 _pad;
	u64 idle_reset_ns;      /* 0: a direction's count only resets on SYN */
	u64 threshold[MAX_LEVELS - 1]; /* ascending, bytes; levels-1 used */
	u8 dscp[MAX_LEVELS];    /* per level, highest priority first */
};

/* pias_flow is one direction of a TCP connection, as its packets carry it. */
struct pias_flow {
	u32 saddr;
	u32 daddr;
	u16 sport;
	u16 dport;
};

struct pias_flow_state {
	u64 sent;    /* payload bytes this direction sent since its reset */
	u64 last_ns; /* when it last sent payload */
};

/* pias_level_stats counts what left at each level; resets (at index
 * MAX_LEVELS, in pkts) counts idle-gap restarts. */
struct pias_level_stats {
	u64 pkts;
	u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct pias_config);
} settings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* Go sets Config.MaxFlows */
	__type(key, struct pias_flow);
	__type(value, struct pias_flow_state);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_LEVELS + 1);
	__type(key, u32);
	__type(value, struct pias_level_stats);
} stats SEC(".maps");

static __always_inline void count(u32 idx, u64 bytes)
{
	struct pias_level_stats *s = bpf_map_lookup_elem(&stats, &idx);

	if (s) {
		s->pkts++;
		s->bytes += bytes;
	}
}

/* level_of is the level of a packet that leaves after sent bytes. */
static __always_inline u32 level_of(const struct pias_config *c, u64 sent)
{
	u32 level = 0;

	for (u32 i = 0; i < MAX_LEVELS - 1; i++) {
		if (i + 1 >= c->levels || sent < c->threshold[i])
			break;
		level = i + 1;
	}
	return level;
}

SEC("tc")
int homatb_pias(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct iphdr *ip = data + ETH_HLEN;
	struct tcphdr *tcp;
	u32 zero = 0, ihl, thl, level = 0;
	s64 payload;

	if (skb->protocol != bpf_htons(ETH_P_IP) || (void *)(ip + 1) > end)
		return TC_ACT_OK;
	if (ip->protocol != IPPROTO_TCP || ip->ihl < 5 ||
	    (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return TC_ACT_OK;
	ihl = ip->ihl * 4;
	tcp = (void *)ip + ihl;
	if ((void *)(tcp + 1) > end)
		return TC_ACT_OK;
	thl = tcp->doff * 4;
	/* skb->len, not tot_len: a GSO packet may exceed 64 KB. */
	payload = (s64)skb->len - ETH_HLEN - ihl - thl;
	if (payload < 0)
		payload = 0;

	struct pias_config *c = bpf_map_lookup_elem(&settings, &zero);
	if (!c || c->levels == 0)
		return TC_ACT_OK;

	struct pias_flow k = {
		.saddr = ip->saddr,
		.daddr = ip->daddr,
		.sport = tcp->source,
		.dport = tcp->dest,
	};
	bool syn = tcp->syn;
	u64 now = bpf_ktime_get_ns();
	struct pias_flow_state *f = bpf_map_lookup_elem(&flows, &k);

	if (!f || syn) {
		struct pias_flow_state st = { .sent = payload, .last_ns = now };

		bpf_map_update_elem(&flows, &k, &st, BPF_ANY);
	} else if (payload > 0) {
		u64 sent = f->sent;

		if (c->idle_reset_ns && now - f->last_ns > c->idle_reset_ns) {
			sent = 0;
			count(MAX_LEVELS, 0);
		}
		level = level_of(c, sent);
		/* Only this connection's sender updates its direction, so the
		 * racing writers are rare; a lost update shifts one packet. */
		f->sent = sent + payload;
		f->last_ns = now;
	}

	level &= MAX_LEVELS - 1;
	count(level, payload);

	u8 old_tos = ip->tos;
	u8 new_tos = (c->dscp[level] << 2) | (old_tos & 3);
	if (new_tos == old_tos)
		return TC_ACT_OK;
	/* The checksum covers 16-bit words: the one holding the TOS byte. */
	u16 old_word = *(u16 *)ip;
	u8 w[2] = { *(u8 *)ip, new_tos };
	u16 new_word = *(u16 *)w;

	bpf_skb_store_bytes(skb, ETH_HLEN + 1, &new_tos, 1, 0);
	bpf_l3_csum_replace(skb, ETH_HLEN + 10, old_word, new_word, 2);
	return TC_ACT_OK;
}
