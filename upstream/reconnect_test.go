package upstream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// retryOf is a pacer's retry source: the server set d, or none when d < 0.
func retryOf(d time.Duration) func() (time.Duration, bool) {
	return func() (time.Duration, bool) { return d, d >= 0 }
}

const noRetry = time.Duration(-1)

func TestPacerDelays(t *testing.T) {
	s := time.Second
	ms := time.Millisecond
	tests := []struct {
		name   string
		retry  time.Duration
		jitter float64
		steps  []outcome
		want   []time.Duration // the delay before the first step, then after each
	}{
		{name: "a retry is waited exactly while streams open", retry: 500 * ms,
			steps: []outcome{idle, idle, delivered, idle},
			want:  []time.Duration{500 * ms, 500 * ms, 500 * ms, 500 * ms, 500 * ms}},
		{name: "refusals back off from the retry, doubling after the first", retry: 500 * ms,
			steps: []outcome{refused, refused, refused, idle},
			want:  []time.Duration{500 * ms, 500 * ms, 1 * s, 2 * s, 500 * ms}},
		{name: "jitter lengthens a backoff by up to half, never a retry", retry: 500 * ms, jitter: 0.5,
			steps: []outcome{refused, refused, delivered},
			want:  []time.Duration{500 * ms, 625 * ms, 1250 * ms, 500 * ms}},
		{name: "no retry: silent streams back off from 1 s to the 30 s cap", retry: noRetry,
			steps: []outcome{idle, idle, idle, idle, idle, idle, idle, idle},
			want:  []time.Duration{1 * s, 1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s}},
		{name: "no retry: a stream that delivers resets the backoff", retry: noRetry,
			steps: []outcome{idle, idle, idle, delivered},
			want:  []time.Duration{1 * s, 1 * s, 2 * s, 4 * s, 1 * s}},
		{name: "no retry: the cap is jittered too", retry: noRetry, jitter: 0.5,
			steps: []outcome{refused, refused, refused, refused, refused, refused, refused},
			want:  []time.Duration{1250 * ms, 1250 * ms, 2500 * ms, 5 * s, 10 * s, 20 * s, 37500 * ms, 37500 * ms}},
		{name: "a retry of 0 is taken as the floor", retry: 0,
			steps: []outcome{idle, idle},
			want:  []time.Duration{100 * ms, 100 * ms, 100 * ms}},
		{name: "a retry above the cap is honoured", retry: time.Minute,
			steps: []outcome{idle, refused, refused},
			want:  []time.Duration{time.Minute, time.Minute, time.Minute, time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pacer{retry: retryOf(tt.retry), jitter: func() float64 { return tt.jitter }}
			got := []time.Duration{p.delay()}
			for _, o := range tt.steps {
				p.record(o)
				got = append(got, p.delay())
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got delays %v; want %v", got, tt.want)
			}
		})
	}
}

func TestPacerCountsRefusalsInARow(t *testing.T) {
	p := &pacer{retry: retryOf(noRetry)}
	for _, o := range []outcome{refused, refused, idle, refused, refused, refused} {
		p.record(o)
	}
	if p.refusals != 3 {
		t.Fatalf("got %d refusals in a row; want 3 (an opened stream ends a run)", p.refusals)
	}
}

// poll runs the reopen loop of a server that ends every stream at once
// (each attempt ends as o), on the bubble's clock, until ctx ends, and
// returns how many streams were opened.
func poll(ctx context.Context, p *pacer, o outcome) int {
	n := 0
	for sleep(ctx, p.delay()) == nil {
		n++
		p.record(o)
	}
	return n
}

// TestPacerReopensOncePerInterval counts the reopenings of a stream a
// server ends every time, on synctest's fake clock.
func TestPacerReopensOncePerInterval(t *testing.T) {
	tests := []struct {
		name   string
		retry  time.Duration
		jitter float64
		o      outcome
		window time.Duration
		want   int
	}{
		{name: "retry 500 ms: six in 3.25 s", retry: 500 * time.Millisecond, o: idle, window: 3250 * time.Millisecond, want: 6},
		{name: "no retry: at 1, 2, 4, 8 and 16 s in 30 s", retry: noRetry, o: idle, window: 30 * time.Second, want: 5},
		{name: "no retry, the most jitter: at 1.5, 3, 6 and 12 s in 20 s", retry: noRetry, jitter: 0.999, o: idle, window: 20 * time.Second, want: 4},
		{name: "retry 0: ten a second at most", retry: 0, o: idle, window: 1050 * time.Millisecond, want: 10},
		{name: "refused with retry 500 ms: at 0.5, 1, 2 and 4 s in 5 s", retry: 500 * time.Millisecond, o: refused, window: 5 * time.Second, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), tt.window)
				defer cancel()
				p := &pacer{retry: retryOf(tt.retry), jitter: func() float64 { return tt.jitter }}
				if got := poll(ctx, p, tt.o); got != tt.want {
					t.Fatalf("%d streams opened in %v; want %d", got, tt.window, tt.want)
				}
			})
		})
	}
}

// TestSleepEndsWithItsContext: a wait of an hour ends when its context
// does, at once, with the context's error.
func TestSleepEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		err := sleep(ctx, time.Hour)
		if !errors.Is(err, context.Canceled) || time.Since(start) != time.Second {
			t.Fatalf("got %v after %v; want context.Canceled after 1s", err, time.Since(start))
		}
	})
}
