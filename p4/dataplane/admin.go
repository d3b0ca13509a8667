package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/homatb/homatb/p4/switchstats"
)

// AdminHandler serves the run-time control of the dataplane:
//
//	GET  /stats               the Stats JSON
//	POST /stats/reset-window  restart peaks and delay percentiles (ResetWindow)
//	GET  /faults              the fault settings of every port
//	POST /faults  {"port": 1, "drop_prob": 0.01, "drop_every": 0, "direction": "both", "down_for": "500ms"}
//	POST /postcards/start {"path": "/run/switch/exp/s1.postcards"}  start per-packet records (StartPostcards)
//	POST /postcards/stop  stop them; answers a switchstats.PostcardSummary
func (d *Dataplane) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /postcards/start", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Path string `json:"path"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || req.Path == "" {
			http.Error(w, fmt.Sprintf("want {\"path\": \"...\"}: %v", err), http.StatusBadRequest)
			return
		}
		if err := d.StartPostcards(req.Path); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		writeJSON(w, http.StatusOK, switchstats.PostcardSummary{Path: req.Path})
	})
	mux.HandleFunc("POST /postcards/stop", func(w http.ResponseWriter, _ *http.Request) {
		s, err := d.StopPostcards()
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		writeJSON(w, http.StatusOK, s)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, d.Stats())
	})
	mux.HandleFunc("POST /stats/reset-window", func(w http.ResponseWriter, _ *http.Request) {
		d.ResetWindow()
		writeJSON(w, http.StatusOK, d.Stats())
	})
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, d.faultSettings())
	})
	mux.HandleFunc("POST /faults", func(w http.ResponseWriter, r *http.Request) {
		var fs switchstats.FaultSetting
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fs); err != nil {
			http.Error(w, "bad fault setting: "+err.Error(), http.StatusBadRequest)
			return
		}
		cur, err := d.Fault(fs.Port)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		down, err := applySetting(fs, &cur)
		if err == nil {
			err = d.SetFault(fs.Port, cur)
		}
		if err == nil && fs.DownFor != nil {
			err = d.SetLinkDown(fs.Port, down)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, http.StatusOK, d.faultSettings())
	})
	return mux
}

// applySetting writes the loss fields of fs into f and returns the down
// time it asks for; it checks them all before anything changes.
func applySetting(fs switchstats.FaultSetting, f *Fault) (time.Duration, error) {
	if fs.DropProb != nil {
		f.DropProb = *fs.DropProb
	}
	if fs.DropEvery != nil {
		f.EveryN = *fs.DropEvery
	}
	if fs.Direction != nil {
		dir, err := ParseDirection(*fs.Direction)
		if err != nil {
			return 0, err
		}
		f.Direction = dir
	}
	var down time.Duration
	if fs.DownFor != nil {
		var err error
		if down, err = time.ParseDuration(*fs.DownFor); err != nil || down < 0 {
			return 0, fmt.Errorf("down_for %q: expected a duration such as 500ms, or 0s to bring the link up", *fs.DownFor)
		}
	}
	return down, f.check()
}

func (d *Dataplane) faultSettings() []switchstats.FaultSetting {
	out := make([]switchstats.FaultSetting, 0, len(d.ports))
	for _, ps := range d.ports {
		f := ps.fault.get()
		dir := f.Direction.String()
		left, _ := d.LinkDown(ps.num)
		down := left.String()
		out = append(out, switchstats.FaultSetting{Port: ps.num, DropProb: &f.DropProb, DropEvery: &f.EveryN, Direction: &dir, DownFor: &down})
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to tell it
}

// ServeAdmin serves h on a Unix socket at path until ctx ends, then removes
// the socket. A socket file left by a dead process is replaced; one that a
// live process still answers on is an error.
func ServeAdmin(ctx context.Context, path string, h http.Handler) error {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("admin socket %s: in use by another process", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("admin socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // a slow client is cut off when Serve returns
	}()
	err = srv.Serve(ln)
	cancel()
	<-done
	os.Remove(path)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("admin socket %s: %w", path, err)
}
