package switchstats

import (
	"reflect"
	"strings"
	"testing"
)

// fill sets every numeric field of v (a struct) to n, recursing into
// slices of structs, which it gives one element each.
func fill(v reflect.Value, n uint64) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(n)
		case reflect.Int:
			f.SetInt(int64(n))
		case reflect.Float64:
			f.SetFloat(float64(n))
		case reflect.String:
			f.SetString("x")
		case reflect.Slice:
			s := reflect.MakeSlice(f.Type(), 1, 1)
			fill(s.Index(0), n)
			f.Set(s)
		}
	}
}

// check walks got and asserts every field is the difference (2) unless
// it is a gauge, which keeps its end value (5).
func check(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	ty := v.Type()
	for i := range v.NumField() {
		f := v.Field(i)
		name := strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]
		var got float64
		switch f.Kind() {
		case reflect.Uint16, reflect.Uint32, reflect.Uint64:
			got = float64(f.Uint())
		case reflect.Int:
			got = float64(f.Int())
		case reflect.Float64:
			got = f.Float()
		case reflect.Slice:
			for j := range f.Len() {
				check(t, path+"."+name, f.Index(j))
			}
			continue
		default:
			continue
		}
		want := 2.0
		if IsGauge(name) {
			want = 5
		}
		if got != want {
			t.Errorf("%s.%s = %v, want %v (gauge %v)", path, name, got, want, IsGauge(name))
		}
	}
}

// TestDiffEveryField gives every field of a start snapshot 3 and of an end
// snapshot 5: a counter must come out as 2 and a gauge as 5. A field added
// to the format and forgotten in Diff fails here.
func TestDiffEveryField(t *testing.T) {
	var start, end Stats
	fill(reflect.ValueOf(&start).Elem(), 3)
	fill(reflect.ValueOf(&end).Elem(), 5)
	check(t, "stats", reflect.ValueOf(Diff(start, end)))
}

func TestDiff(t *testing.T) {
	start := Stats{DeviceID: 1, Ports: []Port{{Port: 1, RxPkts: 10, RateBps: 100,
		Queues: []Queue{{Queue: 0, SentBytes: 1000, PeakPkts: 5, DepthPkts: 2}}}}}
	end := Stats{DeviceID: 1, Ports: []Port{
		{Port: 1, RxPkts: 25, RateBps: 100, KernelDrops: 3,
			Queues: []Queue{{Queue: 0, SentBytes: 4000, PeakPkts: 9}, {Queue: 1, SentBytes: 7}}},
		{Port: 2, TxPkts: 4}, // a port the start did not have
	}}
	d := Diff(start, end)
	p, q := d.Ports[0], d.Ports[0].Queues
	tests := []struct {
		name      string
		got, want uint64
	}{
		{"counter differenced", p.RxPkts, 15},
		{"gauge kept", p.RateBps, 100},
		{"port id kept", uint64(p.Port), 1},
		{"counter from zero", p.KernelDrops, 3},
		{"queue counter", q[0].SentBytes, 3000},
		{"peak kept", uint64(q[0].PeakPkts), 9},
		{"depth kept", uint64(q[0].DepthPkts), 0},
		{"queue absent at start", q[1].SentBytes, 7},
		{"port absent at start", d.Ports[1].TxPkts, 4},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	// A counter that went backwards (the switch restarted) is taken whole.
	if r := Diff(end, start); r.Ports[0].RxPkts != 10 {
		t.Errorf("restarted counter: got %d, want 10", r.Ports[0].RxPkts)
	}
}
