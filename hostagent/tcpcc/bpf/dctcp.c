// SPDX-License-Identifier: GPL-2.0
/*
 * homatb_dctcp: Data Center TCP (RFC 8257) as a BPF congestion control.
 *
 * Sender: over each window of data (from one snd_nxt to the ACK that covers
 * it) it counts the bytes acknowledged and those acknowledged with ECE, and
 * updates alpha = (1 - g) * alpha + g * F with g = 1/16 and F the marked
 * fraction. When the kernel enters CWR on an ECE (at most once per window),
 * ssthresh is cwnd * (1 - alpha / 2). Loss halves the window as Reno does.
 *
 * Receiver: ECE echoes exactly the CE state of the data it acknowledges, so
 * when that state flips while an ACK is being delayed the pending ACK is sent
 * first, carrying the old state (RFC 8257 section 3.2).
 *
 * ECN is negotiated because the ops carry TCP_CONG_NEEDS_ECN.
 */
#include "tcpcc.h"

char _license[] SEC("license") = "GPL";

/* alpha is a fraction in units of 2^-ALPHA_SHIFT: 20 bits keep the 1/16
 * steps of the EWMA exact down to tiny marking rates. */
#define ALPHA_SHIFT 20
#define ALPHA_ONE (1U << ALPHA_SHIFT)
/* g = 2^-G_SHIFT. */
#define G_SHIFT 4

struct dctcp_state {
	u32 alpha;         /* estimated fraction of marked bytes */
	u32 window_end;    /* snd_nxt when the current observation window began */
	u32 prior_snd_una; /* snd_una at the previous ACK */
	u32 acked_bytes;   /* bytes acknowledged in this window */
	u32 marked_bytes;  /* of which with ECE */
	u32 loss_cwnd;     /* cwnd before the last reduction, for undo */
	u32 prior_rcv_nxt; /* receiver: rcv_nxt before the current segment */
	u8 ce_state;       /* receiver: CE state of the last data received */
	u8 ca_state;       /* the TCP_CA_* state last set */
};

static __always_inline struct dctcp_state *dctcp_of(struct sock *sk)
{
	return (struct dctcp_state *)as_csk(sk)->icsk_ca_priv;
}

static __always_inline void start_window(struct sock *sk, struct dctcp_state *st)
{
	struct tcp_sock *tp = as_tcp(sk);

	st->window_end = tp->snd_nxt;
	st->acked_bytes = 0;
	st->marked_bytes = 0;
}

SEC("struct_ops")
void BPF_PROG(homatb_dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = as_tcp(sk);
	struct dctcp_state *st = dctcp_of(sk);

	/* RFC 8257 3.3: start at alpha = 1, reacting fully to the first marks. */
	st->alpha = ALPHA_ONE;
	st->prior_snd_una = tp->snd_una;
	st->prior_rcv_nxt = tp->rcv_nxt;
	st->loss_cwnd = 0;
	st->ce_state = 0;
	st->ca_state = TCP_CA_Open;
	start_window(sk, st);
}

/* update_alpha closes the observation window once snd_una passes its end. */
static __always_inline void update_alpha(struct sock *sk, struct dctcp_state *st)
{
	u32 alpha = st->alpha;
	u64 frac;

	/* alpha -= g * alpha, leaving a floor below 2^G_SHIFT units rather
	 * than rounding a small alpha up. */
	alpha -= alpha >> G_SHIFT;
	if (st->marked_bytes && st->acked_bytes) {
		frac = ((u64)st->marked_bytes << ALPHA_SHIFT) / st->acked_bytes;
		alpha += (u32)(frac >> G_SHIFT);
	}
	st->alpha = min_u32(alpha, ALPHA_ONE);
	start_window(sk, st);
}

SEC("struct_ops")
void BPF_PROG(homatb_dctcp_in_ack_event, struct sock *sk, u32 flags)
{
	struct tcp_sock *tp = as_tcp(sk);
	struct dctcp_state *st = dctcp_of(sk);
	u32 acked = tp->snd_una - st->prior_snd_una;

	/* A duplicate ACK on the slow path acknowledges no new bytes but
	 * reports one segment received: count it as one MSS, so marks
	 * carried by dupacks are not lost. */
	if (acked == 0 && (flags & CA_ACK_SLOWPATH))
		acked = as_csk(sk)->icsk_ack.rcv_mss;
	st->prior_snd_una = tp->snd_una;
	st->acked_bytes += acked;
	if (flags & CA_ACK_ECE)
		st->marked_bytes += acked;
	if (!seq_before(tp->snd_una, st->window_end))
		update_alpha(sk, st);
}

SEC("struct_ops")
__u32 BPF_PROG(homatb_dctcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = as_tcp(sk);
	struct dctcp_state *st = dctcp_of(sk);
	u32 cwnd = tp->snd_cwnd;
	u32 cut = (u32)(((u64)cwnd * st->alpha) >> (ALPHA_SHIFT + 1));

	st->loss_cwnd = cwnd;
	return max_u32(cwnd - cut, 2);
}

/* react_to_loss halves the window as Reno would (RFC 8257 3.4): the kernel
 * calls ssthresh (the alpha cut) before set_state, so this overrides it. */
static __always_inline void react_to_loss(struct sock *sk, struct dctcp_state *st)
{
	struct tcp_sock *tp = as_tcp(sk);

	st->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = max_u32(tp->snd_cwnd >> 1, 2);
}

SEC("struct_ops")
void BPF_PROG(homatb_dctcp_set_state, struct sock *sk, __u8 new_state)
{
	struct dctcp_state *st = dctcp_of(sk);

	if ((new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss) &&
	    new_state != st->ca_state)
		react_to_loss(sk, st);
	st->ca_state = new_state;
}

/* set_ce_state makes the receiver's ECE follow the CE state of the data. */
static __always_inline void set_ce_state(struct sock *sk, struct dctcp_state *st, u8 ce)
{
	struct tcp_sock *tp = as_tcp(sk);

	if (st->ce_state != ce) {
		/* An ACK held back by delayed ACK covers data of the old state:
		 * send it now, before ECE changes. */
		if (as_csk(sk)->icsk_ack.pending & ICSK_ACK_TIMER)
			bpf_tcp_send_ack(tp, st->prior_rcv_nxt);
		st->ce_state = ce;
	}
	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
	st->prior_rcv_nxt = tp->rcv_nxt;
}

SEC("struct_ops")
void BPF_PROG(homatb_dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct dctcp_state *st = dctcp_of(sk);

	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
		set_ce_state(sk, st, 1);
		break;
	case CA_EVENT_ECN_NO_CE:
		set_ce_state(sk, st, 0);
		break;
	default:
		break;
	}
}

SEC("struct_ops")
void BPF_PROG(homatb_dctcp_cong_avoid, struct sock *sk, u32 ack, u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(homatb_dctcp_undo_cwnd, struct sock *sk)
{
	return max_u32(as_tcp(sk)->snd_cwnd, dctcp_of(sk)->loss_cwnd);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops homatb_dctcp = {
	.init = (void *)homatb_dctcp_init,
	.in_ack_event = (void *)homatb_dctcp_in_ack_event,
	.ssthresh = (void *)homatb_dctcp_ssthresh,
	.set_state = (void *)homatb_dctcp_set_state,
	.cwnd_event = (void *)homatb_dctcp_cwnd_event,
	.cong_avoid = (void *)homatb_dctcp_cong_avoid,
	.undo_cwnd = (void *)homatb_dctcp_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "homatb_dctcp",
};
