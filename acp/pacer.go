package acp

import "time"

// pacer is a token bucket — burst frames at once, then rate per second —
// that also listens to the pipe. It knows nothing of the machine's load:
// no ACP message says how far a client's handler has got, so the rate is
// a setting (see Options.UpdatesPerSecond), and the one signal there is,
// the pipe, only lowers it for a while. acp-go-sdk's reader drains the pipe into
// its queue whatever its handler's pace, so a write the pipe holds back
// means the client's process itself is starved (an overloaded machine):
// then its handler is slower than usual too, and the rate halves (down to
// minPaceRate) and climbs back to the configured rate over paceRecovery.
// Only the outbox's writer calls it.
type pacer struct {
	base   float64 // the configured rate; <= 0 = unpaced
	rate   float64 // the rate now, base unless a stall lowered it
	burst  float64
	tokens float64
	last   time.Time
}

const (
	// paceStall is how long a write must wait on the pipe to count as
	// the client stalling (a pipe holds 64 KiB, a hundred frames or more).
	paceStall    = 20 * time.Millisecond
	minPaceRate  = 25
	paceRecovery = 5 * time.Second
)

func newPacer(rate float64, burst int) *pacer {
	return &pacer{base: rate, rate: rate, burst: float64(burst), tokens: float64(burst), last: time.Now()}
}

// refill accrues the tokens (and the recovering rate) since the last call.
func (p *pacer) refill(now time.Time) {
	dt := now.Sub(p.last).Seconds()
	p.last = now
	if p.rate < p.base {
		p.rate = min(p.base, p.rate+p.base*dt/paceRecovery.Seconds())
	}
	p.tokens = min(p.burst, p.tokens+dt*p.rate)
}

// take takes a token if one is there.
func (p *pacer) take() bool {
	if p.base <= 0 {
		return true
	}
	p.refill(time.Now())
	if p.tokens >= 1 {
		p.tokens--
		return true
	}
	return false
}

// wait waits for the next token to accrue and takes it (a timer, not a
// poll), unless stop closes first. Call it after take failed. A timer that
// fires late leaves the surplus in the bucket, so the rate holds on
// average.
func (p *pacer) wait(stop <-chan struct{}) {
	need := time.Duration((1 - p.tokens) / p.rate * float64(time.Second))
	t := time.NewTimer(need)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
	p.refill(time.Now())
	p.tokens--
}

// wrote tells the pacer how long the pipe took to take one frame.
func (p *pacer) wrote(d time.Duration) {
	if p.base <= 0 || d < paceStall {
		return
	}
	p.rate = max(min(minPaceRate, p.base), p.rate/2)
	p.tokens = min(p.tokens, 0) // no burst right after a stall
}
