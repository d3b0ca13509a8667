/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared declarations of homatb's BPF congestion controls: what vmlinux.h
 * (generated from the running kernel's BTF at build time) lacks, and the
 * kernel's TCP kfuncs the controls call.
 */
#ifndef HOMATB_TCPCC_H
#define HOMATB_TCPCC_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* #defines of include/net/tcp.h: BTF carries no macros. */
#define TCP_CONG_NEEDS_ECN 0x2
#define TCP_ECN_OK 0x1
#define TCP_ECN_DEMAND_CWR 0x4
#define TCP_INFINITE_SSTHRESH 0x7fffffff

#define min_u32(a, b) ((u32)(a) < (u32)(b) ? (u32)(a) : (u32)(b))
#define max_u32(a, b) ((u32)(a) > (u32)(b) ? (u32)(a) : (u32)(b))

/* The kernel's Reno pieces, exported to BPF congestion controls as kfuncs. */
extern void tcp_reno_cong_avoid(struct sock *sk, u32 ack, u32 acked) __ksym;
extern u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern u32 tcp_slow_start(struct tcp_sock *tp, u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, u32 w, u32 acked) __ksym;

/* as_tcp views a socket of a TCP congestion-control hook as its tcp_sock. */
static __always_inline struct tcp_sock *as_tcp(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

/* as_csk views it as its inet_connection_sock (icsk_ca_priv, icsk_ack). */
static __always_inline struct inet_connection_sock *as_csk(struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* in_slow_start is the kernel's test: cwnd below ssthresh. */
static __always_inline bool in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* seq_before compares TCP sequence numbers modulo 2^32. */
static __always_inline bool seq_before(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

#endif
