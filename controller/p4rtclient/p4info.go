package p4rtclient

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// LoadP4Info reads a P4Info file in text (.txt, .txtpb, .pbtxt, .textproto)
// or binary (.bin, .pb) protobuf form; other extensions try binary, then
// text. The file is also checked for consistency (ids, references), and every
// error names the file.
func LoadP4Info(path string) (*p4configv1.P4Info, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("p4info: %w", err)
	}
	info, err := ParseP4Info(data, filepath.Ext(path))
	if err != nil {
		return nil, fmt.Errorf("p4info %s: %w", path, err)
	}
	return info, nil
}

// ParseP4Info decodes a P4Info from bytes. format is a file extension
// (".txtpb", ".bin", ...) or empty to guess, and the result is checked with
// NewSchema so a file that decodes but makes no sense is rejected too.
func ParseP4Info(data []byte, format string) (*p4configv1.P4Info, error) {
	info := &p4configv1.P4Info{}
	var err error
	switch strings.ToLower(strings.TrimPrefix(format, ".")) {
	case "txt", "txtpb", "pbtxt", "textproto", "textpb":
		err = textUnmarshal(data, info)
	case "bin", "pb", "binpb":
		err = proto.Unmarshal(data, info)
	default:
		if berr := proto.Unmarshal(data, info); berr != nil || len(info.GetTables())+len(info.GetActions()) == 0 {
			info.Reset()
			if terr := textUnmarshal(data, info); terr != nil {
				err = errors.Join(fmt.Errorf("as binary: %v", berr), terr)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if _, err := NewSchema(info); err != nil {
		return nil, err
	}
	return info, nil
}

func textUnmarshal(data []byte, info *p4configv1.P4Info) error {
	if err := prototext.Unmarshal(data, info); err != nil {
		return fmt.Errorf("as text: %w", err)
	}
	return nil
}
