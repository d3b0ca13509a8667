package switchstats

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/homatb/homatb/wire"
)

// Postcard is the switch's record of one forwarded frame: when it came in,
// entered and left its queue, where it went, and the transport key that
// lets a reader match it to an RPC. The embedded target writes one per
// frame it sends during an experiment (run directory file
// switch/<experiment>/<sw>.postcards, docs/formats.md); it is declared here,
// with the statistics, so that p4 imports nothing outside it.
//
// Times are on the dataplane clock: monotonic nanoseconds since the
// dataplane started, whose wall-clock origin is the file header's EpochNs.
type Postcard struct {
	ArrivalNs int64 // the receive batch holding the frame returned
	EnqueueNs int64 // the traffic manager accepted it into its queue
	DequeueNs int64 // its serialization on the egress link started (the shaper's slot)

	IngressPort uint16
	EgressPort  uint16
	Queue       uint8
	Kind        PostcardKind
	HomaType    uint8 // Homa packet type (0x10 DATA, ...); 0 unless Kind is KindHoma
	IPProto     uint8 // 0 when the frame is not IPv4
	FrameLen    uint16

	SrcIP, DstIP     [4]byte
	SrcPort, DstPort uint16

	// RPCID is the Homa sender id: the RPC id, even from the client and
	// odd (id|1) from the server. Zero for other frames.
	RPCID uint64
	// Seq is the Homa offset (the first message byte in a DATA packet) or
	// the TCP sequence number.
	Seq uint32
	// PayloadLen is the TCP payload length; zero otherwise.
	PayloadLen uint32
}

// PostcardKind says which transport key a postcard holds.
type PostcardKind uint8

// The kinds of transport key.
const (
	KindOther PostcardKind = iota // not IPv4, or neither TCP nor Homa: addresses and ports only
	KindTCP                       // IPv4 TCP: 4-tuple, Seq and PayloadLen
	KindHoma                      // IPv4 protocol 146: 4-tuple, HomaType, RPCID and Seq (offset)
)

// PostcardLen is the size of one encoded postcard.
const PostcardLen = 64

// PostcardMagic starts a postcard file; its last byte is the format version.
var PostcardMagic = [8]byte{'H', 'T', 'B', 'P', 'C', 'R', 'D', 1}

// PostcardHeaderLen is the size of a postcard file's header: the magic, the
// dataplane clock's origin as Unix nanoseconds, the record length (uint32),
// a flags byte (PostcardSieved) and three reserved bytes.
const PostcardHeaderLen = 24

// PostcardSieved, in a postcard file header's flags, says the file holds
// only the records a reader chose to keep (the latency anatomy's sieve,
// package anatomy), not every frame the switch sent. A switch writes 0.
const PostcardSieved = 1

// postcardFlagsAt is the flags byte's offset in the header.
const postcardFlagsAt = 20

var le = binary.LittleEndian

// Encode writes p into b, little-endian, at fixed offsets:
//
//	0 ArrivalNs  8 EnqueueNs  16 DequeueNs  24 IngressPort  26 EgressPort
//	28 Queue  29 Kind  30 HomaType  31 IPProto  32 FrameLen  34 reserved (2)
//	36 SrcIP  40 DstIP  44 SrcPort  46 DstPort  48 RPCID  56 Seq  60 PayloadLen
func (p *Postcard) Encode(b *[PostcardLen]byte) {
	le.PutUint64(b[0:], uint64(p.ArrivalNs))
	le.PutUint64(b[8:], uint64(p.EnqueueNs))
	le.PutUint64(b[16:], uint64(p.DequeueNs))
	le.PutUint16(b[24:], p.IngressPort)
	le.PutUint16(b[26:], p.EgressPort)
	b[28], b[29], b[30], b[31] = p.Queue, byte(p.Kind), p.HomaType, p.IPProto
	le.PutUint16(b[32:], p.FrameLen)
	b[34], b[35] = 0, 0
	copy(b[36:40], p.SrcIP[:])
	copy(b[40:44], p.DstIP[:])
	le.PutUint16(b[44:], p.SrcPort)
	le.PutUint16(b[46:], p.DstPort)
	le.PutUint64(b[48:], p.RPCID)
	le.PutUint32(b[56:], p.Seq)
	le.PutUint32(b[60:], p.PayloadLen)
}

// Decode reads a postcard written by Encode.
func (p *Postcard) Decode(b *[PostcardLen]byte) {
	*p = Postcard{
		ArrivalNs:   int64(le.Uint64(b[0:])),
		EnqueueNs:   int64(le.Uint64(b[8:])),
		DequeueNs:   int64(le.Uint64(b[16:])),
		IngressPort: le.Uint16(b[24:]),
		EgressPort:  le.Uint16(b[26:]),
		Queue:       b[28],
		Kind:        PostcardKind(b[29]),
		HomaType:    b[30],
		IPProto:     b[31],
		FrameLen:    le.Uint16(b[32:]),
		SrcIP:       [4]byte(b[36:40]),
		DstIP:       [4]byte(b[40:44]),
		SrcPort:     le.Uint16(b[44:]),
		DstPort:     le.Uint16(b[46:]),
		RPCID:       le.Uint64(b[48:]),
		Seq:         le.Uint32(b[56:]),
		PayloadLen:  le.Uint32(b[60:]),
	}
}

// AppendPostcardHeader appends a postcard file header whose clock origin
// is epochNs (Unix nanoseconds).
func AppendPostcardHeader(b []byte, epochNs int64) []byte {
	b = append(b, PostcardMagic[:]...)
	b = le.AppendUint64(b, uint64(epochNs))
	b = le.AppendUint32(b, PostcardLen)
	return append(b, 0, 0, 0, 0)
}

// ParsePostcardHeader checks a postcard file header and returns its clock
// origin (Unix nanoseconds).
func ParsePostcardHeader(b []byte) (int64, error) {
	if len(b) < PostcardHeaderLen {
		return 0, errors.New("postcards: short header")
	}
	if [8]byte(b[:8]) != PostcardMagic {
		return 0, fmt.Errorf("postcards: bad magic %q", b[:8])
	}
	if n := le.Uint32(b[16:]); n != PostcardLen {
		return 0, fmt.Errorf("postcards: record length %d, want %d", n, PostcardLen)
	}
	return int64(le.Uint64(b[8:])), nil
}

// ParseKey fills the transport key of p (Kind, IPProto, addresses, ports,
// HomaType, RPCID, Seq, PayloadLen) from an Ethernet frame, leaving the
// other fields alone. It reads fixed offsets and never allocates; a frame
// too short for a header keeps what was parsed before it.
func (p *Postcard) ParseKey(f []byte) {
	p.Kind, p.IPProto, p.HomaType = KindOther, 0, 0
	p.SrcIP, p.DstIP, p.SrcPort, p.DstPort = [4]byte{}, [4]byte{}, 0, 0
	p.RPCID, p.Seq, p.PayloadLen = 0, 0, 0
	const eth = 14
	if len(f) < eth+20 || f[12] != 0x08 || f[13] != 0x00 || f[eth]>>4 != 4 {
		return
	}
	ihl := int(f[eth]&0x0f) * 4
	total := int(f[eth+2])<<8 | int(f[eth+3])
	p.IPProto = f[eth+9]
	p.SrcIP = [4]byte(f[eth+12 : eth+16])
	p.DstIP = [4]byte(f[eth+16 : eth+20])
	l4 := eth + ihl
	if ihl < 20 || len(f) < l4+4 {
		return
	}
	p.SrcPort = uint16(f[l4])<<8 | uint16(f[l4+1])
	p.DstPort = uint16(f[l4+2])<<8 | uint16(f[l4+3])
	switch p.IPProto {
	case 6: // TCP: seq at 4, data offset in the high nibble of byte 12
		if len(f) < l4+20 {
			return
		}
		p.Kind = KindTCP
		p.Seq = be32(f[l4+4:])
		if pl := total - ihl - int(f[l4+12]>>4)*4; pl > 0 {
			p.PayloadLen = uint32(pl)
		}
	case wire.IPProto:
		if len(f) < l4+wire.CommonLen {
			return
		}
		h := f[l4:]
		p.Kind = KindHoma
		p.Seq = be32(h[wire.SequenceOffset:])
		p.HomaType = h[wire.TypeOffset]
		p.RPCID = uint64(be32(h[wire.SenderIDOffset:]))<<32 | uint64(be32(h[wire.SenderIDOffset+4:]))
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// PostcardReader reads a postcard file record by record; memory does not
// grow with the file.
type PostcardReader struct {
	// EpochNs is the file's clock origin, Unix nanoseconds: a record's
	// times happened at EpochNs plus their value.
	EpochNs int64
	// Flags are the header's flags (PostcardSieved).
	Flags uint8
	br    *bufio.Reader
	n     int
	b     [PostcardLen]byte
}

// NewPostcardReader reads and checks the file header from r.
func NewPostcardReader(r io.Reader) (*PostcardReader, error) {
	pr := &PostcardReader{br: bufio.NewReaderSize(r, 1<<16)}
	var h [PostcardHeaderLen]byte
	if _, err := io.ReadFull(pr.br, h[:]); err != nil {
		return nil, fmt.Errorf("postcards: header: %w", err)
	}
	var err error
	pr.EpochNs, err = ParsePostcardHeader(h[:])
	pr.Flags = h[postcardFlagsAt]
	return pr, err
}

// SetPostcardFlags sets the flags of the postcard file header h.
func SetPostcardFlags(h []byte, flags uint8) { h[postcardFlagsAt] = flags }

// Next decodes the next record into p; it returns io.EOF after the last
// one, and an error for a file cut short mid-record (a switch killed
// while writing).
func (pr *PostcardReader) Next(p *Postcard) error {
	if _, err := io.ReadFull(pr.br, pr.b[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("postcards: record %d: %w", pr.n, err)
	}
	pr.n++
	p.Decode(&pr.b)
	return nil
}

// ReadPostcards reads a postcard file from r, calling fn for each record in
// file order (the Postcard is reused between calls), and returns the file's
// clock origin.
func ReadPostcards(r io.Reader, fn func(*Postcard) error) (int64, error) {
	pr, err := NewPostcardReader(r)
	if err != nil {
		return 0, err
	}
	var p Postcard
	for {
		switch err := pr.Next(&p); {
		case errors.Is(err, io.EOF):
			return pr.EpochNs, nil
		case err != nil:
			return pr.EpochNs, err
		}
		if err := fn(&p); err != nil {
			return pr.EpochNs, err
		}
	}
}
