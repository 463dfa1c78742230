package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// schedStat is what the kernel's scheduler accounted to the threads of a
// process (/proc/PID/task/*/schedstat): time on a CPU, time runnable but
// waiting for one, and how many times a thread was put on a CPU. Unlike a
// latency, the first and the last hardly change with what else runs on
// the machine: they say what the process itself costs per message.
type schedStat struct {
	run, wait time.Duration
	slices    int64
}

// readSchedStat sums the scheduler's counts over pid's threads.
func readSchedStat(pid int) (schedStat, error) {
	paths, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(paths) == 0 {
		return schedStat{}, fmt.Errorf("no scheduler statistics for process %d (a Linux /proc is needed): %v", pid, err)
	}
	var s schedStat
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited since the listing
		}
		var run, wait, slices int64
		if _, err := fmt.Sscan(string(b), &run, &wait, &slices); err != nil {
			return schedStat{}, fmt.Errorf("%s: %q: %v", p, b, err)
		}
		s.run += time.Duration(run)
		s.wait += time.Duration(wait)
		s.slices += slices
	}
	return s, nil
}

// callCost is what a process cost per call: time on a CPU, and how many
// times one of its threads was put on a CPU (each a wake-up).
type callCost struct {
	cpu  time.Duration
	runs float64
}

// perCall is what the process cost between from and s, per call of n.
func (s schedStat) perCall(from schedStat, n int) callCost {
	if n <= 0 {
		return callCost{}
	}
	return callCost{cpu: (s.run - from.run) / time.Duration(n), runs: float64(s.slices-from.slices) / float64(n)}
}
