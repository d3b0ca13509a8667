package stats

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRoundJSON(t *testing.T) {
	in := `{"z":466.32300000000004,"a":[1,0.1,1e-7,12345678901234,1.5e+300],"s":"0.30000000000000004","n":null,"t":true,"o":{}}`
	out, err := roundJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"z": 466.323`, `0.0000001`, `12345678901234`, `"s": "0.30000000000000004"`, `"n": null`, `"t": true`, `"o": {}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if strings.Index(string(out), `"z"`) > strings.Index(string(out), `"a"`) {
		t.Errorf("keys reordered:\n%s", out)
	}
	var back map[string]any
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if back["a"].([]any)[4].(float64) != 1.5e300 {
		t.Errorf("1.5e300 read back as %v", back["a"].([]any)[4])
	}
}
