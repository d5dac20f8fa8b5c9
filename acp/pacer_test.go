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

// The pace follows the CPU pressure the kernel reports: at half the time
// stalled the rate is half, and never below a tenth of the configured rate;
// a kernel without PSI leaves the configured rate alone.
func TestPacerFollowsCPUPressure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu")
	psi := func(total int) {
		body := fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", total)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	psi(1000)
	p := newPacer(500, 256)
	p.cpu = newCPUPressure(path)
	if !p.cpu.usable {
		t.Fatal("a PSI file was not read")
	}
	t0 := p.cpu.at
	psi(1000 + 500_000) // half of the next second stalled
	if got := p.effective(t0.Add(time.Second)); got != 250 {
		t.Fatalf("rate %v at half the time stalled, want 250", got)
	}
	psi(1000 + 500_000 + 10_000_000) // all of the next ten seconds
	if got := p.effective(t0.Add(11 * time.Second)); got != 50 {
		t.Fatalf("rate %v with the CPU saturated, want the floor of a tenth, 50", got)
	}
	if got := p.effective(t0.Add(11*time.Second + pressureEvery/2)); got != 50 {
		t.Fatalf("between samples the rate moved to %v", got)
	}
	none := newPacer(500, 256)
	none.cpu = newCPUPressure(filepath.Join(t.TempDir(), "missing"))
	if got := none.effective(time.Now().Add(time.Minute)); got != 500 {
		t.Fatalf("without PSI the rate is %v, want 500", got)
	}
}
