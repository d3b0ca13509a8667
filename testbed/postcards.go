package testbed

import (
	"github.com/homatb/homatb/anatomy"
	"github.com/homatb/homatb/rundir"
)

// sieveRecords starts gathering the experiment's RPCs for its switch
// records' sieve, when the scenario keeps sampled records
// (switch.records).
func (x *experimentRun) sieveRecords() {
	if x.e.Scenario.Switch.Records != rundir.RecordsSampled {
		return
	}
	rf := x.r.records
	rf.mu.Lock()
	if rf.sieve != nil {
		rf.sieve.Close() // an earlier experiment's, abandoned by its error
	}
	rf.sieve = &anatomy.Sieve{}
	rf.mu.Unlock()
}

// compactRecords keeps the experiment's switch records as switch.records
// says, compressed (anatomy.Compact), once its rows are all in rpcs.csv.
func (x *experimentRun) compactRecords() error {
	rf := x.r.records
	rf.mu.Lock()
	s := rf.sieve
	rf.sieve = nil
	rf.mu.Unlock()
	if s != nil {
		if err := s.Finish(); err != nil {
			return err
		}
	}
	st, err := anatomy.Compact(x.r.dir, x.e.Name, s)
	if err != nil {
		return err
	}
	if st.RawBytes > 0 {
		x.r.log.Info("switch records kept", "experiment", x.e.Name, "records", x.e.Scenario.Switch.Records,
			"read", st.Read, "kept", st.Kept, "raw_bytes", st.RawBytes, "zstd_bytes", st.ZstdBytes)
	}
	return nil
}
