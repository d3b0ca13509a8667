package homa

import "testing"

// TestBufPool: get gives the length asked in a power-of-two capacity,
// put keeps only such buffers and only up to bufPoolBytes, and get
// hands a kept buffer back before it allocates.
func TestBufPool(t *testing.T) {
	cases := []struct {
		name    string
		put     []int // capacities of buffers put, in order
		get     uint32
		wantCap int
		reused  bool // the buffer got is one of those put
		held    int  // the pool's bytes after the get
	}{
		{name: "empty pool allocates", get: 1448, wantCap: 2048},
		{name: "power of two", get: 4096, wantCap: 4096},
		{name: "reuses its class", put: []int{2048}, get: 1500, wantCap: 2048, reused: true},
		{name: "other class not reused", put: []int{4096}, get: 1500, wantCap: 2048, held: 4096},
		{name: "not its own buffer", put: []int{3000}, get: 2000, wantCap: 2048},
		{name: "bounded", put: []int{bufPoolBytes / 2, bufPoolBytes / 2, bufPoolBytes / 2}, get: 1, wantCap: 1, held: bufPoolBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p bufPool
			mine := map[*byte]bool{}
			for _, c := range tc.put {
				b := make([]byte, 10, c)
				mine[&b[:1][0]] = true
				p.put(b)
			}
			b := p.get(tc.get)
			if len(b) != int(tc.get) || cap(b) != tc.wantCap {
				t.Errorf("get(%d): len %d cap %d, want cap %d", tc.get, len(b), cap(b), tc.wantCap)
			}
			if got := mine[&b[:1][0]]; got != tc.reused {
				t.Errorf("get(%d) reused a buffer put: %v, want %v", tc.get, got, tc.reused)
			}
			if p.bytes != tc.held {
				t.Errorf("pool holds %d bytes, want %d", p.bytes, tc.held)
			}
		})
	}
}
