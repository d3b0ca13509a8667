package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// envHeapProfile names the environment variable that has a run's agents
// and switches write heap profiles too (PREFIX-agent-H1-NNN.pprof,
// PREFIX-switch-N-NNN.pprof): they inherit it through the Mininet runner
// from `homatb run`, where setting it is the debugging aid's only switch.
const envHeapProfile = "HOMATB_HEAP_PROFILE"

// heapProfilesFromEnv starts heapProfiles for the process named who when
// envHeapProfile is set; the returned func stops it.
func heapProfilesFromEnv(who string, log *slog.Logger) (stop func()) {
	prefix := os.Getenv(envHeapProfile)
	if prefix == "" {
		return func() {}
	}
	return heapProfiles(prefix+"-"+who, 30*time.Second, log)
}

// heapProfiles writes a heap profile to PREFIX-NNN.pprof every interval
// until stop is called, and a last one then: the live heap over a long
// run, for finding what it holds (hidden flag --heap-profile).
func heapProfiles(prefix string, interval time.Duration, log *slog.Logger) (stop func()) {
	n := 0
	write := func() {
		runtime.GC() // the profile's in-use figures are as of the last collection
		path := fmt.Sprintf("%s-%03d.pprof", prefix, n)
		n++
		f, err := os.Create(path)
		if err == nil {
			err = pprof.Lookup("heap").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			log.Warn("heap profile", "path", path, "err", err)
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				write()
				return
			case <-t.C:
				write()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// cpuProfile profiles the process's CPU into path until the returned func
// is called (hidden flag --cpu-profile): where a long simulated run spends
// its time.
func cpuProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			slog.Warn("cpu profile", "path", path, "err", err)
		}
	}, nil
}
