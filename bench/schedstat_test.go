package main

import (
	"os"
	"testing"
	"time"
)

// TestReadSchedStat: this process's threads have run, and the counts grow
// with work done between two reads.
func TestReadSchedStat(t *testing.T) {
	before, err := readSchedStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for i := range 100_000_000 { // some CPU time the second read must see
		sum += i
	}
	after, err := readSchedStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.run <= 0 || before.slices <= 0 || after.run <= before.run {
		t.Fatalf("before %+v, after %+v (sum %d): want a process that has run, and more CPU time after the loop", before, after, sum)
	}
	if _, err := readSchedStat(-1); err == nil {
		t.Fatal("readSchedStat(-1): got no error; want one that says no statistics were found")
	}
}

// TestPerCall: per-call costs are the differences divided by the calls.
func TestPerCall(t *testing.T) {
	from := schedStat{run: 1 * time.Millisecond, slices: 10}
	to := schedStat{run: 5 * time.Millisecond, slices: 35}
	got := to.perCall(from, 10)
	if want := (callCost{cpu: 400 * time.Microsecond, runs: 2.5}); got != want {
		t.Fatalf("perCall: got %+v; want %+v", got, want)
	}
	if got := to.perCall(from, 0); got != (callCost{}) {
		t.Fatalf("perCall of no calls: got %+v; want zero", got)
	}
}
