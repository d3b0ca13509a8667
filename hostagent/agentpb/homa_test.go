package agentpb

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// fillEvery sets every field of v, recursively for structs, to a value
// of its own, so a field that does not cross the conversion shows up as
// a difference.
func fillEvery(t *testing.T, v reflect.Value, seed int) {
	t.Helper()
	for i := range v.NumField() {
		f, n := v.Field(i), seed+i+1
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("v" + strings.Repeat("x", n))
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(int64(n) * int64(time.Microsecond))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(n))
		case reflect.Slice:
			s := reflect.MakeSlice(f.Type(), 2, 2)
			s.Index(0).SetUint(uint64(n))
			s.Index(1).SetUint(uint64(n + 1))
			f.Set(s)
		default:
			t.Fatalf("homaconf.Config.%s: kind %s not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
}

// TestHomaParamsRoundTrip checks that every field of homaconf.Config,
// set to a value of its own, survives NewHomaParams, the protobuf wire
// and HomaParams.Config.
func TestHomaParamsRoundTrip(t *testing.T) {
	var c homaconf.Config
	fillEvery(t, reflect.ValueOf(&c).Elem(), 0)
	wire, err := proto.Marshal(&ConfigureRequest{Homa: NewHomaParams(c)})
	if err != nil {
		t.Fatal(err)
	}
	var req ConfigureRequest
	if err := proto.Unmarshal(wire, &req); err != nil {
		t.Fatal(err)
	}
	got, err := req.GetHoma().Config()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip\n got %+v\nwant %+v", got, c)
	}
}

func TestHomaParamsDecode(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    *HomaParams
		want string // "" for valid
	}{
		{"absent", nil, ""},
		{"empty", &HomaParams{}, ""},
		{"unknown field", &HomaParams{ConfigJson: []byte(`{"Overcommit":2,"Frobnicate":1}`)}, `unknown field "Frobnicate"`},
		{"wrong type", &HomaParams{ConfigJson: []byte(`{"Overcommit":"two"}`)}, "Overcommit"},
	} {
		c, err := tt.p.Config()
		switch {
		case tt.want == "" && (err != nil || !reflect.DeepEqual(c, homaconf.Config{})):
			t.Errorf("%s: %+v, %v; want the zero config", tt.name, c, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}
