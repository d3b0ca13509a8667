// Command wakeup measures how late this machine wakes a sleeping thread:
// it sleeps on the same timerfd the Homa engine's pacer and the switch's
// ports use (internal/hrtime) a number of times and prints the lateness
// quantiles as one JSON object. Run it beside an experiment to see the
// scheduling floor every hop of an emulated RPC pays (docs/emulation.md).
//
//	go run ./bench/wakeup [-n 5000] [-sleep 1ms] [-nice -10] [-slice 100us]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/homatb/homatb/internal/hrtime"
	"github.com/homatb/homatb/internal/schedprio"
)

// result is what one measurement prints.
type result struct {
	N       int     `json:"n"`
	SleepUs float64 `json:"sleep_us"`
	Nice    int     `json:"nice"`
	SliceUs float64 `json:"slice_us,omitempty"`
	P50Us   float64 `json:"late_p50_us"`
	P90Us   float64 `json:"late_p90_us"`
	P99Us   float64 `json:"late_p99_us"`
	P999Us  float64 `json:"late_p999_us"`
	MaxUs   float64 `json:"late_max_us"`
}

func main() {
	n := flag.Int("n", 5000, "sleeps to measure (1-1000000)")
	sleep := flag.Duration("sleep", time.Millisecond, "length of each sleep (10µs-1s)")
	nice := flag.Int("nice", -10, "nice value to run at, as the agents and switches do (0 leaves it)")
	slice := flag.Duration("slice", 0, "EEVDF time slice to ask for, as `homatb run --slice` does (0 leaves the kernel's)")
	flag.Parse()
	if err := run(*n, *sleep, *nice, *slice); err != nil {
		fmt.Fprintln(os.Stderr, "wakeup:", err)
		os.Exit(1)
	}
}

func run(n int, sleep time.Duration, nice int, slice time.Duration) error {
	if n < 1 || n > 1_000_000 {
		return fmt.Errorf("-n: expected 1 to 1000000, got %d", n)
	}
	if sleep < 10*time.Microsecond || sleep > time.Second {
		return fmt.Errorf("-sleep: expected 10µs to 1s, got %v", sleep)
	}
	runtime.GOMAXPROCS(1) // as the agents run
	if nice != 0 {
		if err := schedprio.Nice(nice); err != nil {
			return err
		}
	}
	if slice != 0 {
		if err := schedprio.Slice(slice); err != nil {
			return err
		}
	}
	tm, err := hrtime.NewTimer()
	if err != nil {
		return err
	}
	defer tm.Close()
	late := make([]time.Duration, n)
	for i := range late {
		t0 := time.Now()
		if err := tm.Sleep(sleep); err != nil {
			return err
		}
		late[i] = time.Since(t0) - sleep
	}
	r := summarize(late, sleep, nice)
	r.SliceUs = float64(slice) / 1e3
	return json.NewEncoder(os.Stdout).Encode(r)
}

// summarize sorts late and takes its nearest-rank quantiles.
func summarize(late []time.Duration, sleep time.Duration, nice int) result {
	slices.Sort(late)
	q := func(p float64) float64 {
		i := min(len(late)-1, max(0, int(p*float64(len(late))+0.999999)-1))
		return float64(late[i]) / 1e3
	}
	return result{N: len(late), SleepUs: float64(sleep) / 1e3, Nice: nice,
		P50Us: q(0.5), P90Us: q(0.9), P99Us: q(0.99), P999Us: q(0.999), MaxUs: float64(late[len(late)-1]) / 1e3}
}
