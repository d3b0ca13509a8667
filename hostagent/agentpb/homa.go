package agentpb

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/homatb/homatb/hostagent/homa/homaconf"
)

// NewHomaParams is the control API's form of a Homa configuration: c
// encoded as JSON. It and HomaParams.Config are the one conversion between
// the two, so every field of homaconf.Config crosses the API as it is.
func NewHomaParams(c homaconf.Config) *HomaParams {
	b, err := json.Marshal(c)
	if err != nil {
		// Config holds numbers, strings, booleans and a list of numbers;
		// TestHomaParamsRoundTrip fails first if that ever changes.
		panic(fmt.Sprintf("agentpb: encode homa config: %v", err))
	}
	return &HomaParams{ConfigJson: b}
}

// Config decodes the configuration NewHomaParams encoded; absent params
// are the zero Config (every default). A field the agent does not know
// is an error, so an orchestrator newer than its agents is refused rather
// than half obeyed. Limits are checked by Config.WithDefaults, not here.
func (p *HomaParams) Config() (homaconf.Config, error) {
	var c homaconf.Config
	b := p.GetConfigJson()
	if len(b) == 0 {
		return c, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return homaconf.Config{}, fmt.Errorf("homa params: decode config: %w", err)
	}
	return c, nil
}
