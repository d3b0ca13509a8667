package workloads

import (
	"bytes"
	"fmt"
	"math/rand/v2"
)

// Matrix generators: the kinds `homatb cm` writes.
const (
	GenRingAllReduce = "ring-allreduce"
	GenIncast        = "incast"
	GenPermutation   = "permutation"
)

// MatrixGenerators lists the generators' kinds.
var MatrixGenerators = []string{GenRingAllReduce, GenIncast, GenPermutation}

// Permutation is a random permutation among nodes, each node sending one
// flow of Bytes and receiving one, all at time 0, no flow staying in its
// pod: nodes are in pods of PodSize consecutive nodes (0: each node its
// own pod, so only self-flows are excluded). Seed picks the permutation.
type Permutation struct {
	Nodes, PodSize int
	Bytes          int64
	Seed           uint64
}

// Generate writes the permutation's matrix in htsim's format.
func (p Permutation) Generate() ([]byte, error) {
	if p.Nodes < 2 || p.Nodes > 65536 {
		return nil, fmt.Errorf("expected 2 to 65536 nodes, got %d", p.Nodes)
	}
	if p.Bytes < 1 {
		return nil, fmt.Errorf("expected flows of 1 byte or more, got %d", p.Bytes)
	}
	pod := max(p.PodSize, 1)
	if p.PodSize < 0 || p.Nodes%pod != 0 || p.Nodes/pod < 2 {
		return nil, fmt.Errorf("expected pods of a size that divides %d nodes into two or more, got %d", p.Nodes, p.PodSize)
	}
	dest, err := crossPodPermutation(p.Nodes, pod, p.Seed)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "Nodes %d\nConnections %d\n", p.Nodes, p.Nodes)
	for s, d := range dest {
		fmt.Fprintf(&out, "%d->%d id %d start 0 size %d\n", s, d, s+1, p.Bytes)
	}
	return out.Bytes(), nil
}

// crossPodPermutation is a permutation of n nodes in pods of pod nodes
// with no node mapped into its own pod: a uniform shuffle, then each
// node left in its pod swaps targets with a random node for which the
// swap moves both out of their pods (a bounded number of tries).
func crossPodPermutation(n, pod int, seed uint64) ([]int, error) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	dest := rng.Perm(n)
	same := func(a, b int) bool { return a/pod == b/pod }
	for s := range n {
		for try := 0; same(s, dest[s]); try++ {
			if try == 64*n {
				return nil, fmt.Errorf("no permutation out of every pod found for %d nodes in pods of %d", n, pod)
			}
			o := rng.IntN(n)
			if !same(s, dest[o]) && !same(o, dest[s]) {
				dest[s], dest[o] = dest[o], dest[s]
			}
		}
	}
	return dest, nil
}

// GenerateMatrix writes a connection matrix of kind among nodes nodes in
// htsim's format, triggers laid out as htsim's own generators lay them
// out. buffer is the collective's bytes as a collective phase's bytes:
// every flow carries buffer/nodes.
//
// ring-allreduce: nodes chains, one per chunk, of 2(nodes-1) flows each
// around the ring (node s+d-1 to s+d for the chunk of node s); a chain's
// first flow starts at 0, each later one on a oneshot trigger its
// predecessor's send_done activates. Every node sends one flow of each
// step, so its step k waits for the data of step k-1 as a ring
// all-reduce's does. (htsim's gen_allreduce.py writes 2·nodes-1 flows per
// chain, one more than a ring all-reduce's steps.)
//
// incast: nodes 1..nodes-1 each send a flow to node 0 at 0. With
// releaseBytes > 0 node 0 then sends each of them a releaseBytes flow,
// all on one barrier trigger activated by the incast flows' recv_done:
// an incast barrier (htsim's gen_incast.py writes the incast alone).
func GenerateMatrix(kind string, nodes int, buffer, releaseBytes int64) ([]byte, error) {
	if nodes < 2 || nodes > 65536 {
		return nil, fmt.Errorf("expected 2 to 65536 nodes, got %d", nodes)
	}
	chunk := buffer / int64(nodes)
	if chunk < 1 {
		return nil, fmt.Errorf("%d bytes among %d nodes leave no byte per flow", buffer, nodes)
	}
	if releaseBytes < 0 {
		return nil, fmt.Errorf("expected a release of 0 or more bytes, got %d", releaseBytes)
	}
	var flows, triggers bytes.Buffer
	nFlows, nTriggers := 0, 0
	switch kind {
	case GenRingAllReduce:
		steps := 2 * (nodes - 1)
		id, trig := 0, 1
		for s := range nodes {
			for d := 1; d <= steps; d++ {
				id++
				fmt.Fprintf(&flows, "%d->%d id %d", (s+d-1)%nodes, (s+d)%nodes, id)
				if d == 1 {
					flows.WriteString(" start 0")
				} else {
					fmt.Fprintf(&flows, " trigger %d", trig)
					trig++
				}
				fmt.Fprintf(&flows, " size %d", chunk)
				if d != steps {
					fmt.Fprintf(&flows, " send_done_trigger %d", trig)
				}
				flows.WriteByte('\n')
			}
		}
		nFlows = id
		for t := 1; t < trig; t++ {
			fmt.Fprintf(&triggers, "trigger id %d oneshot\n", t)
			nTriggers++
		}
	case GenIncast:
		for n := 1; n < nodes; n++ {
			fmt.Fprintf(&flows, "%d->0 id %d start 0 size %d", n, n, chunk)
			if releaseBytes > 0 {
				flows.WriteString(" recv_done_trigger 1")
			}
			flows.WriteByte('\n')
		}
		nFlows = nodes - 1
		if releaseBytes > 0 {
			for n := 1; n < nodes; n++ {
				fmt.Fprintf(&flows, "0->%d id %d trigger 1 size %d\n", n, nodes-1+n, releaseBytes)
			}
			nFlows += nodes - 1
			fmt.Fprintf(&triggers, "trigger id 1 barrier count %d\n", nodes-1)
			nTriggers = 1
		}
	case GenPermutation:
		return Permutation{Nodes: nodes, Bytes: buffer}.Generate()
	default:
		return nil, fmt.Errorf("unknown kind %q: expected one of %v", kind, MatrixGenerators)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "Nodes %d\nConnections %d\n", nodes, nFlows)
	if nTriggers > 0 {
		fmt.Fprintf(&out, "Triggers %d\n", nTriggers)
	}
	out.Write(flows.Bytes())
	out.Write(triggers.Bytes())
	return out.Bytes(), nil
}
