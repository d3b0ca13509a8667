package p4rt

import (
	"encoding/json"
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// checkDeviceConfig accepts what BMv2 clients send as p4_device_config: the
// BMv2 JSON itself (p4runtime-shell, p4-utils) or the legacy
// p4.tmp.P4DeviceConfig message whose field 3 carries that JSON
// (p4lang/tutorials). Empty is fine too: this target needs no device config,
// and the bytes are kept only to be returned by GetForwardingPipelineConfig.
func checkDeviceConfig(b []byte) error {
	if len(b) == 0 || json.Valid(b) {
		return nil
	}
	if data, ok := legacyDeviceData(b); ok && (len(data) == 0 || json.Valid(data)) {
		return nil
	}
	return errors.New("p4_device_config is neither BMv2 JSON nor a p4.tmp.P4DeviceConfig carrying it")
}

// legacyDeviceData decodes p4.tmp.P4DeviceConfig{reassign = 1 (bool),
// extras = 2 (message), device_data = 3 (bytes)} by hand; the message is not
// in the Go p4runtime module.
func legacyDeviceData(b []byte) ([]byte, bool) {
	var data []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
		case (num == 2 || num == 3) && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if num == 3 {
				data = v
			}
		default:
			return nil, false
		}
		if n < 0 {
			return nil, false
		}
		b = b[n:]
	}
	return data, true
}
