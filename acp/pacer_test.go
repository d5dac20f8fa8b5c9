package acp

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A write the pipe holds back halves the rate; the rate climbs back to the
// configured one over paceRecovery, never above it; a fast write changes
// nothing.
func TestPacerHalvesOnStallAndRecovers(t *testing.T) {
	p := newPacer(500, 256)
	p.wrote(paceStall / 2)
	if p.rate != 500 {
		t.Fatalf("a fast write moved the rate to %v", p.rate)
	}
	p.wrote(paceStall)
	p.wrote(2 * paceStall)
	if p.rate != 125 || p.tokens > 0 {
		t.Fatalf("after two stalls: rate %v, tokens %v; want 125 and no burst", p.rate, p.tokens)
	}
	t0 := p.last
	p.refill(t0.Add(paceRecovery / 2))
	if p.rate != 375 {
		t.Fatalf("half way through the recovery the rate is %v, want 375", p.rate)
	}
	p.refill(t0.Add(2 * paceRecovery))
	if p.rate != 500 {
		t.Fatalf("after the recovery the rate is %v, want 500", p.rate)
	}
	for i := 0; i < 20; i++ {
		p.wrote(time.Second)
	}
	if p.rate != minPaceRate {
		t.Fatalf("a client that stalls on every write holds the rate at %v, want the floor %v", p.rate, minPaceRate)
	}
}

// Tokens accrue from the time that passed, so a timer that fires late does
// not lower the rate: the surplus stays in the bucket.
func TestPacerKeepsTheSurplusOfALateTimer(t *testing.T) {
	p := newPacer(500, 256)
	p.tokens = 0
	t0 := p.last
	p.refill(t0.Add(3 * time.Millisecond)) // 1.5 tokens at 500/s
	if p.tokens < 1.49 || p.tokens > 1.51 {
		t.Fatalf("tokens %v after 3 ms at 500/s, want 1.5", p.tokens)
	}
	p.refill(t0.Add(time.Hour))
	if p.tokens != 256 {
		t.Fatalf("tokens %v after an hour, want the burst", p.tokens)
	}
}

// An unpaced outbox (rate <= 0) ignores stalls.
func TestPacerUnpacedIgnoresStalls(t *testing.T) {
	p := newPacer(-1, 256)
	p.wrote(time.Second)
	if !p.take() || p.rate != -1 {
		t.Fatalf("unpaced pacer: rate %v", p.rate)
	}
}

// The pace follows the share of a CPU a busy task gets: with twice as
// many runnable tasks as CPUs the rate is half, and never below a tenth of
// the configured rate; idle CPUs leave it whole; a machine without the
// file leaves the configured rate alone.
func TestPacerFollowsTheCPUShare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loadavg")
	runnable := func(n int) {
		if err := os.WriteFile(path, []byte(fmt.Sprintf("0.50 0.40 0.30 %d/300 4242\n", n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runnable(1)
	p := newPacer(500, 256)
	p.cpu = newCPUShare(path)
	p.cpu.cpus = 2
	p.cpu.share = p.cpu.of(1)
	if !p.cpu.usable || p.effective(p.cpu.at) != 500 {
		t.Fatalf("one runnable task on two CPUs: usable %v, rate %v, want 500", p.cpu.usable, p.effective(p.cpu.at))
	}
	t0 := p.cpu.at
	runnable(4)
	if got := p.effective(t0.Add(time.Second)); got != 250 {
		t.Fatalf("rate %v with four runnable tasks on two CPUs, want 250", got)
	}
	runnable(200)
	if got := p.effective(t0.Add(2 * time.Second)); got != 50 {
		t.Fatalf("rate %v with the CPUs swamped, want the floor of a tenth, 50", got)
	}
	runnable(2)
	if got := p.effective(t0.Add(2*time.Second + shareEvery/2)); got != 50 {
		t.Fatalf("between readings the rate moved to %v", got)
	}
	if got := p.effective(t0.Add(3 * time.Second)); got != 500 {
		t.Fatalf("rate %v once the CPUs are free again, want 500", got)
	}
	none := newPacer(500, 256)
	none.cpu = newCPUShare(filepath.Join(t.TempDir(), "missing"))
	if got := none.effective(time.Now().Add(time.Minute)); got != 500 {
		t.Fatalf("without the file the rate is %v, want 500", got)
	}
}
