// Package pipeline executes tor.p4 natively: the parser, the TorIngress and
// TorEgress controls with their tables, counters and registers, and the IPv4
// checksum update. Tables are read through an atomically swapped immutable
// snapshot that the P4Runtime server publishes, counters and registers are
// atomics, so ports run Ingress and Egress concurrently without locks and
// without allocating.
package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/homatb/homatb/p4"
	"github.com/homatb/homatb/p4/dataplane"
)

// Verdict and EgressMeta are the dataplane's types: the pipeline fills them
// for the traffic manager.
type (
	Verdict    = dataplane.Verdict
	EgressMeta = dataplane.EgressMeta
)

var _ dataplane.Pipeline = (*Pipeline)(nil)

// DropPort is v1model's egress_spec after mark_to_drop (BMv2's default
// --drop-port).
const DropPort = 511

// tableIndex is the position of each tor.p4 table in a snapshot.
const (
	tblIPv4LPM = iota
	tblDSCPToQueue
	tblARPProxy
	tblECNConfig
	tblPortMode
	tblLoadBalance
	tblNexthop
	tblDefence
	tblSourceGuard
	tblMeterSelect
	numTables
)

// ActionSelect is the action of a nexthop_group entry that refers to an
// action profile group: Params[0] is the index of the group in that
// table's TableContents.Groups, whose member the selector picks per packet.
// It is the selector's id, which no P4 action can have.
const ActionSelect = p4.ProfileUplinkSelector

// snapshot is one immutable set of table contents, swapped in whole.
type snapshot struct {
	tables [numTables]*Table
	// modes is false while port_mode has no entry and its default is
	// strict_priority, so ingress can skip the lookup: the common case
	// then costs what it did before the table existed.
	modes bool
	// groups are nexthop_group's action profile groups: the member actions
	// in selection order (a member of weight w appears w times).
	groups [][]ActionCall
	// spray is true when load_balance's default is spray(); seed is
	// flow_hash's seed when it is not.
	spray bool
	seed  uint32
	// defences is false while ingress_defence and meter_select are empty
	// with their NoAction defaults, so ingress skips them.
	defences bool
}

// TableContents is what the control plane wrote into one table.
type TableContents struct {
	Entries []Entry
	// Default replaces the P4 default action when non-nil.
	Default *ActionCall
	// Groups are the action profile groups entries of an indirect table
	// (nexthop_group) refer to with ActionSelect: each the actions of its
	// members in selection order. An empty group selects nothing (the
	// packet keeps ecmp_forward's drop).
	Groups [][]ActionCall
}

// tableInfo describes one tor.p4 table as this target runs it.
type tableInfo struct {
	ID      uint32
	Name    string
	Actions []uint32 // actions an entry or the default may use
	Default ActionCall
	Size    int
	// Selector: entries refer to action profile groups (ActionSelect).
	Selector bool
}

// torTables is the table layout of tor.p4, in tableIndex order.
func torTables() [numTables]tableInfo {
	return [numTables]tableInfo{
		{ID: p4.TableIPv4LPM, Name: "TorIngress.ipv4_lpm", Actions: []uint32{p4.ActionIPv4Forward, p4.ActionECMPForward, p4.ActionDrop}, Default: ActionCall{ID: p4.ActionDrop}, Size: 1024},
		{ID: p4.TableDSCPToQueue, Name: "TorIngress.dscp_to_queue", Actions: []uint32{p4.ActionSetQueue}, Default: ActionCall{ID: p4.ActionSetQueue}, Size: 64},
		{ID: p4.TableARPProxy, Name: "TorIngress.arp_proxy", Actions: []uint32{p4.ActionARPReply, p4.ActionDrop}, Default: ActionCall{ID: p4.ActionDrop}, Size: 1024},
		{ID: p4.TableECNConfig, Name: "TorEgress.ecn_config", Actions: []uint32{p4.ActionSetECNThreshold, p4.ActionSetECNRED, p4.ActionNoAction}, Default: ActionCall{ID: p4.ActionNoAction}, Size: 512},
		{ID: p4.TablePortMode, Name: "TorIngress.port_mode", Actions: []uint32{p4.ActionStrictPriority, p4.ActionRankOrder, p4.ActionTrimAbove}, Default: ActionCall{ID: p4.ActionStrictPriority}, Size: 512},
		{ID: p4.TableLoadBalance, Name: "TorIngress.load_balance", Actions: []uint32{p4.ActionFlowHash, p4.ActionSpray}, Default: ActionCall{ID: p4.ActionFlowHash}, Size: 1},
		{ID: p4.TableNexthop, Name: "TorIngress.nexthop_group", Actions: []uint32{p4.ActionSetEgress, p4.ActionNoAction}, Default: ActionCall{ID: p4.ActionNoAction}, Size: 1024, Selector: true},
		{ID: p4.TableDefence, Name: "TorIngress.ingress_defence", Actions: []uint32{p4.ActionPortDefence, p4.ActionNoAction}, Default: ActionCall{ID: p4.ActionNoAction}, Size: 64},
		{ID: p4.TableSourceGuard, Name: "TorIngress.source_guard", Actions: []uint32{p4.ActionSourceOK, p4.ActionNoAction}, Default: ActionCall{ID: p4.ActionNoAction}, Size: 1024},
		{ID: p4.TableMeterSelect, Name: "TorIngress.meter_select", Actions: []uint32{p4.ActionUseMeter, p4.ActionNoAction}, Default: ActionCall{ID: p4.ActionNoAction}, Size: 512},
	}
}

// DefaultAction is the P4 default action of a tor.p4 table, the one the
// program runs while the control plane has not replaced it. ok is false for
// a table tor.p4 does not have.
func DefaultAction(table uint32) (a ActionCall, ok bool) {
	for _, t := range torTables() {
		if t.ID == table {
			return t.Default, true
		}
	}
	return ActionCall{}, false
}

// ErrUnknownTable is returned for a table id tor.p4 does not have.
var ErrUnknownTable = errors.New("unknown table")

// ErrUnknownObject is returned for a counter or register id tor.p4 does not have.
var ErrUnknownObject = errors.New("unknown counter or register")

// ErrIndex is returned for a counter or register index out of range.
var ErrIndex = errors.New("index out of range")

// counterCell is one packets-and-bytes counter.
type counterCell struct {
	pkts, bytes atomic.Uint64
}

// Pipeline is the tor.p4 program with its state. The zero value is not
// usable; call New.
type Pipeline struct {
	snap       atomic.Pointer[snapshot]
	ingressCtr [p4.QueueSlots]counterCell
	egressCtr  [p4.QueueSlots]counterCell
	depth      [p4.QueueSlots]atomic.Uint32
	peak       [p4.QueueSlots]atomic.Uint32
	delay      [p4.QueueSlots]atomic.Uint32
	// spraySeq is tor.p4's spray_seq register (one cell).
	spraySeq [1]atomic.Uint32
	// The defences' counters, by ingress port, and priority_meter.
	remarkCtr, meterCtr, spoofCtr [p4.PortSlots]counterCell
	meters                        [p4.MeterSlots]meterCell
	// clock is what the meters measure time by, ns.
	clock func() int64
	// rng is the state of v1model's random() (RED marking): a counter
	// that each draw advances and mixes, so draws need no lock, and a
	// seed and the order of draws give the same sequence (the simulator
	// repeats exactly).
	rng atomic.Uint64
}

// defaultRandomSeed is random()'s seed until SeedRandom.
const defaultRandomSeed = 0x746f722e7034 // "tor.p4"

// SeedRandom restarts the sequence of v1model's random() from seed.
func (p *Pipeline) SeedRandom(seed uint64) { p.rng.Store(seed) }

// random16 is v1model's random(r, 0, 0xffff): SplitMix64 (Steele, Lea and
// Flood 2014) over the draw counter, cut to 16 bits.
func (p *Pipeline) random16() uint32 {
	z := p.rng.Add(0x9e3779b97f4a7c15)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return uint32((z ^ z>>31) & 0xffff)
}

// New returns a pipeline with empty tables (every packet is dropped until the
// control plane writes forwarding entries).
func New() *Pipeline {
	epoch := time.Now()
	p := &Pipeline{clock: func() int64 { return int64(time.Since(epoch)) }}
	p.SeedRandom(defaultRandomSeed)
	if err := p.Install(nil); err != nil {
		panic(fmt.Sprintf("pipeline: empty install failed: %v", err)) // cannot happen: nil contents
	}
	return p
}

// SetClock makes the meters measure time by now (ns, never decreasing),
// such as a simulation's virtual clock, instead of the wall clock, and
// fills every meter's buckets at its start. Call it while no packet is in
// the pipeline.
func (p *Pipeline) SetClock(now func() int64) {
	p.clock = now
	t := now()
	for i := range p.meters {
		p.meters[i].set(p.meters[i].config(), t)
	}
}

// Install builds a snapshot from contents (by table id; missing tables are
// empty with their P4 default action) and publishes it atomically: packets
// see either the old tables or the new ones, never a mix.
func (p *Pipeline) Install(contents map[uint32]TableContents) error {
	infos := torTables()
	snap := &snapshot{}
	for id := range contents {
		if tableIndexOf(id) < 0 {
			return fmt.Errorf("install table %#08x: %w", id, ErrUnknownTable)
		}
	}
	for i, info := range infos {
		c := contents[info.ID]
		def := info.Default
		if c.Default != nil {
			def = *c.Default
		}
		if err := checkAction(info, def); err != nil {
			return fmt.Errorf("install %s default: %w", info.Name, err)
		}
		if len(c.Groups) > 0 && !info.Selector {
			return fmt.Errorf("install %s: action profile groups on a table without a selector", info.Name)
		}
		for _, e := range c.Entries {
			if info.Selector && e.Action.ID == ActionSelect {
				if e.Action.Params[0] >= uint64(len(c.Groups)) {
					return fmt.Errorf("install %s entry: group index %d of %d", info.Name, e.Action.Params[0], len(c.Groups))
				}
				continue
			}
			if err := checkAction(info, e.Action); err != nil {
				return fmt.Errorf("install %s entry: %w", info.Name, err)
			}
		}
		for gi, g := range c.Groups {
			for _, a := range g {
				if err := checkAction(info, a); err != nil || a.ID == p4.ActionNoAction {
					return fmt.Errorf("install %s group %d: member action %#08x: not a member action", info.Name, gi, a.ID)
				}
			}
		}
		if len(c.Entries) > info.Size {
			return fmt.Errorf("install %s: %d entries, size %d", info.Name, len(c.Entries), info.Size)
		}
		snap.tables[i] = NewTable(c.Entries, def)
		switch info.ID {
		case p4.TablePortMode:
			snap.modes = len(c.Entries) > 0 || def.ID != p4.ActionStrictPriority
		case p4.TableLoadBalance:
			snap.spray = def.ID == p4.ActionSpray
			if def.ID == p4.ActionFlowHash {
				snap.seed = uint32(def.Params[0])
			}
		case p4.TableDefence, p4.TableMeterSelect:
			snap.defences = snap.defences || len(c.Entries) > 0 || def.ID != p4.ActionNoAction
		case p4.TableNexthop:
			snap.groups = shareGroups(c.Groups)
		}
	}
	p.snap.Store(snap)
	return nil
}

// shareGroups copies groups, one copy for each distinct member list: a
// fabric's switch has a group per destination switch, and all but a few
// list the same uplinks (512 groups of 16 members on a switch of a k=32
// fat tree). The snapshot only reads them.
func shareGroups(groups [][]ActionCall) [][]ActionCall {
	out := make([][]ActionCall, len(groups))
	seen := map[string][]ActionCall{}
	var key []byte
	for i, g := range groups {
		key = key[:0]
		for _, a := range g {
			key = binary.LittleEndian.AppendUint32(key, a.ID)
			for _, p := range a.Params {
				key = binary.LittleEndian.AppendUint64(key, p)
			}
		}
		c, ok := seen[string(key)]
		if !ok {
			c = slices.Clone(g)
			seen[string(key)] = c
		}
		out[i] = c
	}
	return out
}

func checkAction(info tableInfo, a ActionCall) error {
	for _, id := range info.Actions {
		if id == a.ID {
			return nil
		}
	}
	return fmt.Errorf("action %#08x not allowed in %s", a.ID, info.Name)
}

func tableIndexOf(id uint32) int {
	for i, info := range torTables() {
		if info.ID == id {
			return i
		}
	}
	return -1
}

func (p *Pipeline) counterArray(id uint32) []counterCell {
	switch id {
	case p4.CounterIngressQueue:
		return p.ingressCtr[:]
	case p4.CounterEgressQueue:
		return p.egressCtr[:]
	case p4.CounterRemark:
		return p.remarkCtr[:]
	case p4.CounterMeter:
		return p.meterCtr[:]
	case p4.CounterSpoof:
		return p.spoofCtr[:]
	}
	return nil
}

func (p *Pipeline) registerArray(id uint32) []atomic.Uint32 {
	switch id {
	case p4.RegisterQueueDepth:
		return p.depth[:]
	case p4.RegisterQueuePeak:
		return p.peak[:]
	case p4.RegisterQueueDelay:
		return p.delay[:]
	case p4.RegisterSpraySeq:
		return p.spraySeq[:]
	}
	return nil
}

// Counter reads one cell of an indirect counter.
func (p *Pipeline) Counter(id uint32, index int) (pkts, bytes uint64, err error) {
	arr := p.counterArray(id)
	if arr == nil {
		return 0, 0, fmt.Errorf("counter %#08x: %w", id, ErrUnknownObject)
	}
	if index < 0 || index >= len(arr) {
		return 0, 0, fmt.Errorf("counter %#08x index %d: %w", id, index, ErrIndex)
	}
	return arr[index].pkts.Load(), arr[index].bytes.Load(), nil
}

// SetCounter sets one cell of an indirect counter (P4Runtime MODIFY).
func (p *Pipeline) SetCounter(id uint32, index int, pkts, bytes uint64) error {
	arr := p.counterArray(id)
	if arr == nil {
		return fmt.Errorf("counter %#08x: %w", id, ErrUnknownObject)
	}
	if index < 0 || index >= len(arr) {
		return fmt.Errorf("counter %#08x index %d: %w", id, index, ErrIndex)
	}
	arr[index].pkts.Store(pkts)
	arr[index].bytes.Store(bytes)
	return nil
}

// Register reads one cell of a register.
func (p *Pipeline) Register(id uint32, index int) (uint32, error) {
	arr := p.registerArray(id)
	if arr == nil {
		return 0, fmt.Errorf("register %#08x: %w", id, ErrUnknownObject)
	}
	if index < 0 || index >= len(arr) {
		return 0, fmt.Errorf("register %#08x index %d: %w", id, index, ErrIndex)
	}
	return arr[index].Load(), nil
}

// SetRegister writes one cell of a register.
func (p *Pipeline) SetRegister(id uint32, index int, v uint32) error {
	arr := p.registerArray(id)
	if arr == nil {
		return fmt.Errorf("register %#08x: %w", id, ErrUnknownObject)
	}
	if index < 0 || index >= len(arr) {
		return fmt.Errorf("register %#08x index %d: %w", id, index, ErrIndex)
	}
	arr[index].Store(v)
	return nil
}

// ResetState clears every counter and register (a new pipeline config
// clears forwarding state).
func (p *Pipeline) ResetState() {
	for i := range p.ingressCtr {
		p.ingressCtr[i].pkts.Store(0)
		p.ingressCtr[i].bytes.Store(0)
		p.egressCtr[i].pkts.Store(0)
		p.egressCtr[i].bytes.Store(0)
		p.depth[i].Store(0)
		p.peak[i].Store(0)
		p.delay[i].Store(0)
	}
	p.spraySeq[0].Store(0)
	for _, arr := range [][]counterCell{p.remarkCtr[:], p.meterCtr[:], p.spoofCtr[:]} {
		for i := range arr {
			arr[i].pkts.Store(0)
			arr[i].bytes.Store(0)
		}
	}
	now := p.clock()
	for i := range p.meters {
		p.meters[i].set(MeterConfig{}, now)
	}
}

// add counts one packet of n bytes.
func (c *counterCell) add(n int) {
	c.pkts.Add(1)
	c.bytes.Add(uint64(n))
}
