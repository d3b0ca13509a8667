package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/homatb/homatb/reports/stats"
)

// The homa block's keys by who reads them (homaconf's field comments):
// Homa's grant machinery only Homa; the credit window pHost and NDP; the
// roce_ keys RoCE, which also sets unsched_bytes, incast_control and
// at_least_once itself whatever the scenario says. Every other key is the
// engine's and every engine transport reads it; kernel TCP (tcp, pias)
// reads none.
var (
	homaGrantKeys = []string{"overcommit", "basic", "window_bytes", "max_incoming", "fifo_grant_permille",
		"fifo_grants", "fifo_grant_bytes", "grant_increment", "boost_tail", "graduated", "unsched_cutoffs", "cutoff_samples",
		"incast_control", "incast_threshold", "incast_unsched_bytes"}
	creditKeys       = []string{"credit_window_bytes"}
	roceOverriddenKs = []string{"unsched_bytes", "incast_control", "at_least_once"}
)

// defaultTrue are the homa keys whose default is true (homaconf's ",not"
// fields); every other key's default is its zero value.
var defaultTrue = []string{"fifo_grants", "roce_dcqcn", "uet_nscc", "defences"}

// readsKey reports whether transport reads key of its scenario block.
func readsKey(transport, block, key string) bool {
	switch block {
	case "tcp":
		return transport == "tcp" || transport == "pias"
	case "pias", "pfabric", "ndp":
		return transport == block
	case "homa":
	default:
		return true
	}
	if key == "variant" {
		return false // the transport's name says it
	}
	switch transport {
	case "tcp", "pias":
		return false
	case "roce", "uet":
		own := transport + "_"
		return strings.HasPrefix(key, own) || !strings.HasPrefix(key, "roce_") && !strings.HasPrefix(key, "uet_") &&
			!slices.Contains(homaGrantKeys, key) && !slices.Contains(creditKeys, key) && !slices.Contains(roceOverriddenKs, key)
	}
	if strings.HasPrefix(key, "roce_") || strings.HasPrefix(key, "uet_") {
		return false
	}
	switch {
	case slices.Contains(homaGrantKeys, key):
		return transport == "homa"
	case slices.Contains(creditKeys, key):
		return transport == "phost" || transport == "ndp"
	}
	return true
}

// isDefault reports whether a setting's value (as stats.Scalar prints it)
// is key's default.
func isDefault(key, v string) bool {
	if slices.Contains(defaultTrue, key) {
		return v == "true"
	}
	switch v {
	case "", "0", "false", "0s", "[]", "map[]":
		return true
	}
	return false
}

// transportBlocks are a transport entry's setting blocks, in the order the
// report lists them.
var transportBlocks = []string{"homa", "tcp", "pfabric", "ndp", "pias"}

// settingsOf lists the settings a transport's protocol reads that differ
// from their defaults, "defaults" for none.
func settingsOf(t map[string]any) string {
	name := stats.Scalar(t["name"])
	var parts []string
	for _, block := range transportBlocks {
		b := stats.MapOf(t[block])
		for _, k := range slices.Sorted(maps.Keys(b)) {
			if v := stats.Scalar(b[k]); readsKey(name, block, k) && !isDefault(k, v) {
				parts = append(parts, k+" "+v)
			}
		}
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, ", ")
}

// field is one member of a JSON object, in the order it was written.
type field struct {
	key string
	val json.RawMessage
}

// decodeObject reads a JSON object's members in order.
func decodeObject(raw []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("expected a JSON object")
	}
	var out []field
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{t.(string), v})
	}
	return out, nil
}

// encodeObject writes fields back as one JSON object.
func encodeObject(fs []field) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// editMember replaces the member key of the object raw with edit's result.
func editMember(raw json.RawMessage, key string, edit func(json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	fs, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	for i := range fs {
		if fs[i].key == key {
			if fs[i].val, err = edit(fs[i].val); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return encodeObject(fs), nil
}

// readableManifest is the manifest with each transport's blocks cut to the
// keys its protocol reads (a block left empty says "defaults" for the
// rest), for the report's human-readable dump; manifest.json keeps every key.
func readableManifest(raw []byte) ([]byte, error) {
	out, err := editMember(raw, "scenario", func(sc json.RawMessage) (json.RawMessage, error) {
		return editMember(sc, "transports", filterTransports)
	})
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return out, nil
}

// filterTransports cuts every transport entry's blocks to what it reads.
func filterTransports(raw json.RawMessage) (json.RawMessage, error) {
	var ts []json.RawMessage
	if err := json.Unmarshal(raw, &ts); err != nil {
		return nil, err
	}
	for i, t := range ts {
		fs, err := decodeObject(t)
		if err != nil {
			return nil, err
		}
		var name string
		for _, f := range fs {
			if f.key == "name" {
				_ = json.Unmarshal(f.val, &name)
			}
		}
		var kept []field
		for _, f := range fs {
			if !slices.Contains(transportBlocks, f.key) {
				kept = append(kept, f)
				continue
			}
			block, err := decodeObject(f.val)
			if err != nil {
				kept = append(kept, f) // not an object: as written
				continue
			}
			var reads []field
			for _, b := range block {
				if readsKey(name, f.key, b.key) {
					reads = append(reads, b)
				}
			}
			if len(reads) > 0 {
				kept = append(kept, field{f.key, encodeObject(reads)})
			}
		}
		ts[i] = encodeObject(kept)
	}
	return json.Marshal(ts)
}
