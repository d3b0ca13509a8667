package homa

// pfabricPolicy is pFabric's (homaconf.VariantPFabric): every byte goes
// blind at line rate, and each DATA packet carries its message's rank,
// which the switch's rank-ordered queues serve smallest first. Priorities
// only keep control packets ahead on ports that are not rank-ordered.
type pfabricPolicy struct{ familyBase }

// rank is pFabric's rank of a DATA packet, taken before the packet is
// accounted for: the message's remaining size, which is what pFabric ranks
// by — its bytes not yet sent plus those still owed for retransmission
// (msgOut.left), this packet's included, as pFabric's hosts set it (the
// remaining flow size; in its ns-2 agents the flow's end less the
// packet's sequence number). Without this packet's bytes every
// single-packet message and the last packet of every longer one ranked
// 0, so the switches served a 9-byte message first come first served
// with them instead of first (the Homa paper's W1: pFabric's shortest-half
// P99 1.28 times Homa's). Counting only the bytes never sent gave every
// retransmission of a message sent once whole rank 0, which tied it with
// short messages' packets; after heavy loss the rank-ordered queues filled
// with such ties and served them first come first served (compare2018:
// short packets waited behind 22 full-size retransmissions, 52 ms).
func (*pfabricPolicy) rank(o *msgOut) uint32 { return o.left() }

// oldestShare: pFabric schedules by rank alone, at its hosts as at its
// switches, so a message with fewer bytes left always goes first and the
// oldest gets no share of the link.
func (*pfabricPolicy) oldestShare() bool { return false }
