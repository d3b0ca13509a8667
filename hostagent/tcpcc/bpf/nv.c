// SPDX-License-Identifier: GPL-2.0
/*
 * homatb_nv: TCP-NV ("New Vegas", Brakmo, Linux Plumbers 2010) as a BPF
 * congestion control.
 *
 * NV grows the window like Reno (slow start, then one packet per RTT) while
 * it sees no queue, and shrinks it in proportion to the queue it infers:
 * once per RTT it compares cwnd with the window the path carries without
 * queueing, the best rate measured in that RTT (packets delivered over the
 * averaged RTT) times the minimum RTT. More than pad packets above it is
 * congestion. The minimum RTT is re-learnt every few seconds so a route
 * change is noticed. Decisions wait for enough samples and RTTs that one
 * noisy measurement does not move the window. Loss cuts cwnd to 80%.
 *
 * The parameters below are Linux tcp_nv's defaults, with its meanings.
 */
#include "tcpcc.h"

char _license[] SEC("license") = "GPL";

/* Packets of queue NV tolerates in the network. */
#define NV_PAD 10
/* No growth within this many packets below the pad. */
#define NV_PAD_BUFFER 2
/* The minimum RTT is re-learnt about every this many seconds. */
#define NV_RESET_PERIOD_S 5
/* Congestion detection does not take cwnd below this. */
#define NV_MIN_CWND 2
/* On congestion, cwnd drops by this many 128ths of the excess queue. */
#define NV_CONG_DEC_MULT (30 * 128 / 100)
/* Leaving slow start on congestion sets ssthresh to this many 8ths of the
 * queue-free window (plus pad). */
#define NV_SSTHRESH_FACTOR 8
/* Weight (of 256) of the new sample in the averaged RTT. */
#define NV_RTT_FACTOR 128
/* On loss cwnd becomes this many 1024ths of itself. */
#define NV_LOSS_DEC_FACTOR 819
/* RTT samples needed before a decrease, an increase, or leaving slow start. */
#define NV_DEC_EVAL_MIN_CALLS 60
#define NV_INC_EVAL_MIN_CALLS 20
#define NV_SSTHRESH_EVAL_MIN_CALLS 30
/* After a no-congestion verdict cwnd may grow for this many RTTs. */
#define NV_STOP_RTT_CNT 10
/* RTTs needed between two verdicts. */
#define NV_RTT_MIN_CNT 2

#define NV_NO_RTT 0xffffffffU
/* Rates are packets per second in units of 2^-RATE_SHIFT. */
#define RATE_SHIFT 8
#define USEC_PER_SEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL

struct nv_state {
	u64 min_rtt_reset_ns; /* when min_rtt_new replaces min_rtt */
	u32 min_rtt;          /* µs: the minimum of the last period */
	u32 min_rtt_new;      /* µs: the minimum of the period being measured */
	u32 avg_rtt;          /* µs: averaged RTT, 0 before the first sample */
	u32 max_rate;         /* best rate of this RTT round */
	u32 round_end;        /* snd_nxt when this RTT round began */
	u16 eval_calls;       /* RTT samples since the last verdict */
	u8 rtt_rounds;        /* RTT rounds since the last verdict */
	u8 growth_rounds;     /* RTT rounds cwnd may still grow */
	u8 ca_state;          /* the TCP_CA_* state last set */
};

static __always_inline struct nv_state *nv_of(struct sock *sk)
{
	return (struct nv_state *)as_csk(sk)->icsk_ca_priv;
}

/* next_reset picks the next min-RTT reset, 3/4 to 1 period away: the
 * jitter keeps flows that started together from resetting together. */
static __always_inline u64 next_reset(u64 now)
{
	u64 jitter = bpf_get_prandom_u32() & 127;

	return now + NV_RESET_PERIOD_S * NSEC_PER_SEC * (384 + jitter) / 512;
}

/* reset_verdicts starts counting samples and rounds afresh. */
static __always_inline void reset_verdicts(struct sock *sk, struct nv_state *st)
{
	st->eval_calls = 0;
	st->rtt_rounds = 0;
	st->max_rate = 0;
	st->round_end = as_tcp(sk)->snd_nxt;
}

SEC("struct_ops")
void BPF_PROG(homatb_nv_init, struct sock *sk)
{
	struct nv_state *st = nv_of(sk);

	st->min_rtt = NV_NO_RTT;
	st->min_rtt_new = NV_NO_RTT;
	st->min_rtt_reset_ns = next_reset(bpf_ktime_get_ns());
	st->avg_rtt = 0;
	/* Grow (slow start) until the first verdict. */
	st->growth_rounds = 0xff;
	st->ca_state = TCP_CA_Open;
	reset_verdicts(sk, st);
}

SEC("struct_ops")
void BPF_PROG(homatb_nv_cong_avoid, struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = as_tcp(sk);
	struct nv_state *st = nv_of(sk);

	/* The kernel's test: an application-limited window is not grown. */
	if (in_slow_start(tp) ? tp->snd_cwnd >= 2 * tp->max_packets_out : !tp->is_cwnd_limited)
		return;
	if (!st->growth_rounds)
		return;
	if (in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* verdict compares cwnd with the queue-free window at the end of an RTT. */
static __always_inline void verdict(struct sock *sk, struct nv_state *st)
{
	struct tcp_sock *tp = as_tcp(sk);
	u32 cwnd = tp->snd_cwnd;
	u32 queue_free, max_win;

	if (st->rtt_rounds < NV_RTT_MIN_CNT || st->min_rtt == NV_NO_RTT)
		return;
	/* rate (packets/s) x min RTT (s), rounded up. */
	queue_free = (u32)(((u64)st->max_rate * st->min_rtt +
			    (USEC_PER_SEC << RATE_SHIFT) - 1) /
			   (USEC_PER_SEC << RATE_SHIFT));
	max_win = queue_free + NV_PAD;
	if (cwnd > max_win) {
		/* Queue beyond the pad: stop growing; shrink once enough
		 * samples agree. */
		st->growth_rounds = 0;
		if (in_slow_start(tp)) {
			if (st->eval_calls < NV_SSTHRESH_EVAL_MIN_CALLS)
				return;
			tp->snd_ssthresh = max_u32((NV_SSTHRESH_FACTOR * max_win) >> 3, NV_MIN_CWND);
		} else if (st->eval_calls < NV_DEC_EVAL_MIN_CALLS) {
			return;
		}
		if (cwnd - max_win > 2) {
			u32 dec = max_u32(2, ((cwnd - max_win) * NV_CONG_DEC_MULT) >> 7);

			tp->snd_cwnd = max_u32(cwnd - dec, NV_MIN_CWND);
		} else {
			tp->snd_cwnd = max_u32(max_win, NV_MIN_CWND);
		}
		if (tp->snd_ssthresh > tp->snd_cwnd)
			tp->snd_ssthresh = tp->snd_cwnd;
		reset_verdicts(sk, st);
	} else if (cwnd <= max_win - NV_PAD_BUFFER) {
		/* Room below the pad: grow for a while. */
		if (st->eval_calls < NV_INC_EVAL_MIN_CALLS)
			return;
		st->growth_rounds = NV_STOP_RTT_CNT;
		reset_verdicts(sk, st);
	}
	/* Within the pad buffer: hold, keep counting. */
}

SEC("struct_ops")
void BPF_PROG(homatb_nv_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = as_tcp(sk);
	struct nv_state *st = nv_of(sk);
	s32 rtt = sample->rtt_us;
	u32 avg;
	u64 now, rate;

	/* Recovery's RTTs and rates say little about the queue. */
	if (st->ca_state >= TCP_CA_Recovery || rtt <= 0)
		return;
	avg = st->avg_rtt ? (u32)(((u64)st->avg_rtt * (256 - NV_RTT_FACTOR) +
				   (u64)rtt * NV_RTT_FACTOR) >> 8)
			  : (u32)rtt;
	st->avg_rtt = max_u32(avg, 1);
	/* The kernel reports as in_flight the bytes delivered while the
	 * acknowledged packet was in flight (mss x packets): packets over
	 * the averaged RTT is the rate the path carried. */
	rate = ((u64)sample->in_flight * (USEC_PER_SEC << RATE_SHIFT)) /
	       ((u64)st->avg_rtt * max_u32(tp->mss_cache, 1));
	if (rate > 0xffffffffULL)
		rate = 0xffffffffULL;
	if (rate > st->max_rate)
		st->max_rate = (u32)rate;

	/* The minimum of the previous period holds while the next is learnt. */
	now = bpf_ktime_get_ns();
	if ((u32)rtt < st->min_rtt_new)
		st->min_rtt_new = (u32)rtt;
	if (st->min_rtt_new < st->min_rtt)
		st->min_rtt = st->min_rtt_new;
	if (now > st->min_rtt_reset_ns) {
		st->min_rtt = st->min_rtt_new;
		st->min_rtt_new = NV_NO_RTT;
		st->min_rtt_reset_ns = next_reset(now);
	}

	if (st->eval_calls < 0xffff)
		st->eval_calls++;
	if (seq_before(tp->snd_una, st->round_end))
		return;
	/* An RTT round ended. */
	st->round_end = tp->snd_nxt;
	if (st->rtt_rounds < 0xff)
		st->rtt_rounds++;
	if (st->growth_rounds && st->growth_rounds != 0xff)
		st->growth_rounds--;
	verdict(sk, st);
	/* Each round measures its own best rate. */
	st->max_rate = 0;
}

SEC("struct_ops")
__u32 BPF_PROG(homatb_nv_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = as_tcp(sk);

	return max_u32((tp->snd_cwnd * NV_LOSS_DEC_FACTOR) >> 10, 2);
}

SEC("struct_ops")
void BPF_PROG(homatb_nv_set_state, struct sock *sk, __u8 new_state)
{
	struct nv_state *st = nv_of(sk);

	/* A timeout starts the measurements over (the window restarts). */
	if (new_state == TCP_CA_Loss) {
		st->growth_rounds = 0xff;
		reset_verdicts(sk, st);
	}
	st->ca_state = new_state;
}

SEC("struct_ops")
void BPF_PROG(homatb_nv_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	/* After idle the old rates and rounds no longer apply. */
	if (ev == CA_EVENT_TX_START)
		reset_verdicts(sk, nv_of(sk));
}

SEC("struct_ops")
__u32 BPF_PROG(homatb_nv_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops homatb_nv = {
	.init = (void *)homatb_nv_init,
	.cong_avoid = (void *)homatb_nv_cong_avoid,
	.pkts_acked = (void *)homatb_nv_pkts_acked,
	.ssthresh = (void *)homatb_nv_ssthresh,
	.set_state = (void *)homatb_nv_set_state,
	.cwnd_event = (void *)homatb_nv_cwnd_event,
	.undo_cwnd = (void *)homatb_nv_undo_cwnd,
	.name = "homatb_nv",
};
