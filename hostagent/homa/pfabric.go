package homa

// pfabricPolicy is pFabric's (homaconf.VariantPFabric): every byte goes
// blind at line rate, and each DATA packet carries its message's rank,
// which the switch's rank-ordered queues serve smallest first. Priorities
// only keep control packets ahead on ports that are not rank-ordered.
type pfabricPolicy struct{ familyBase }

// rank is pFabric's rank of a DATA packet, taken once the packet is
// accounted for: the message's remaining size, which is what pFabric ranks
// by — its bytes not yet sent plus those still owed for retransmission
// (msgOut.left). Counting only the bytes never sent gave every
// retransmission of a message sent once whole rank 0, which tied it with
// short messages' packets; after heavy loss the rank-ordered queues filled
// with such ties and served them first come first served (compare2018:
// short packets waited behind 22 full-size retransmissions, 52 ms).
func (*pfabricPolicy) rank(o *msgOut) uint32 { return o.left() }
