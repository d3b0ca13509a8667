package tcpmodel

import "testing"

// TestOptions: SACK blocks survive PutOptions and ParseOptions, options
// the model does not know are skipped, and a malformed list reads as no
// more blocks rather than out of bounds.
func TestOptions(t *testing.T) {
	three := Segment{NSACK: 3, SACK: [MaxSACKBlocks]SACKBlock{{10, 20}, {1 << 31, 1<<31 + 1448}, {0xfffffff0, 5}}}
	b := make([]byte, three.OptionsLen())
	three.PutOptions(b)
	for _, tc := range []struct {
		name string
		opts []byte
		want []SACKBlock
	}{
		{"three blocks", b, three.SACK[:]},
		{"none", nil, nil},
		{"timestamps then one block", []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 1, 1, 5, 10, 0, 0, 0, 7, 0, 0, 0, 9}, []SACKBlock{{7, 9}}},
		{"end of list first", []byte{0, 5, 10, 0, 0, 0, 7, 0, 0, 0, 9}, nil},
		{"length past the end", []byte{1, 1, 5, 18, 0, 0, 0, 7, 0, 0, 0, 9}, nil},
		{"length below 2", []byte{5, 1, 0, 0}, nil},
		{"four blocks, three kept", append([]byte{5, 34}, make([]byte, 32)...), make([]SACKBlock, 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Segment{NSACK: 2} // ParseOptions starts afresh
			s.ParseOptions(tc.opts)
			if got := s.SACK[:s.NSACK]; len(got) != len(tc.want) {
				t.Fatalf("%d blocks %v, want %v", len(got), got, tc.want)
			}
			for i, w := range tc.want {
				if s.SACK[i] != w {
					t.Errorf("block %d: %v, want %v", i, s.SACK[i], w)
				}
			}
		})
	}
	if n := three.OptionsLen(); n != 28 || n%4 != 0 {
		t.Errorf("three blocks take %d bytes, want 28 (two NOPs, kind, length, 24)", n)
	}
	if n := (&Segment{}).OptionsLen(); n != 0 {
		t.Errorf("no blocks take %d bytes, want 0", n)
	}
}
