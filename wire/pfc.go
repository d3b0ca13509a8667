package wire

import "encoding/binary"

// Priority flow control (IEEE 802.1Qbb): a PAUSE frame is an Ethernet MAC
// control frame (ethertype 0x8808, opcode 0x0101) to 01:80:C2:00:00:01
// naming, in its class-enable vector, the priorities it pauses, each for
// its own time in quanta of 512 bit times (0 resumes it). The switch sends
// them upstream when a lossless priority's buffer passes XOFF; the roce
// variant's hosts obey them for their data.
const (
	EtherTypeMACControl = 0x8808
	OpcodePFC           = 0x0101
	// PFCQuantaMax is the longest pause one frame asks for.
	PFCQuantaMax = 0xffff
	// PFCQuantumBits is the length of one quantum in bit times.
	PFCQuantumBits = 512
	// PFCFrameLen is a PAUSE frame without its FCS: destination, source,
	// ethertype, opcode, class-enable vector, eight quanta, padding.
	PFCFrameLen = 60
	// PFCClasses is the number of priorities a frame can name.
	PFCClasses = 8

	pfcOpcodeOff = 14
	pfcVectorOff = 16
	pfcQuantaOff = 18
)

// PFCDst is the MAC control multicast address PAUSE frames go to.
var PFCDst = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01}

// PutPFCFrame writes a PFC PAUSE frame into b (at least PFCFrameLen bytes)
// from src: the classes in vector, each with quanta[class] (0 resumes it).
func PutPFCFrame(b []byte, src [6]byte, vector uint8, quanta *[PFCClasses]uint16) {
	clear(b[:PFCFrameLen])
	copy(b[0:6], PFCDst[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:], EtherTypeMACControl)
	binary.BigEndian.PutUint16(b[pfcOpcodeOff:], OpcodePFC)
	binary.BigEndian.PutUint16(b[pfcVectorOff:], uint16(vector))
	for c := range PFCClasses {
		binary.BigEndian.PutUint16(b[pfcQuantaOff+2*c:], quanta[c])
	}
}

// ParsePFCFrame reads a PFC PAUSE frame f (from its Ethernet header): its
// class-enable vector and each class's quanta; ok is false for any other
// frame.
func ParsePFCFrame(f []byte) (vector uint8, quanta [PFCClasses]uint16, ok bool) {
	if len(f) < pfcQuantaOff+2*PFCClasses || binary.BigEndian.Uint16(f[12:]) != EtherTypeMACControl ||
		binary.BigEndian.Uint16(f[pfcOpcodeOff:]) != OpcodePFC {
		return 0, quanta, false
	}
	vector = uint8(binary.BigEndian.Uint16(f[pfcVectorOff:]))
	for c := range PFCClasses {
		quanta[c] = binary.BigEndian.Uint16(f[pfcQuantaOff+2*c:])
	}
	return vector, quanta, true
}

// PFCPause is how long quanta last on a link of linkBps bit/s.
func PFCPause(quanta uint16, linkBps uint64) int64 {
	return int64(uint64(quanta) * PFCQuantumBits * 1e9 / linkBps)
}
