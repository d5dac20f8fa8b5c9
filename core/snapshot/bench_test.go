package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// workspace makes files files in folders of 100, each a few hundred bytes.
func workspace(b *testing.B, files int) string {
	root := b.TempDir()
	for i := range files {
		rel := fmt.Sprintf("pkg%03d/file%03d.go", i/100, i%100)
		write(b, root, rel, fmt.Sprintf("package p%d\n\n// %0300d\n", i/100, i))
		// A workspace's files were written a while ago (files written in
		// the last seconds are read again, see racyWindow).
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(filepath.Join(root, rel), old, old); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// BenchmarkCheckpointUnchanged10k is the cost of a turn-start checkpoint
// of a 10,000-file workspace when nothing changed since the last one (the
// goal is under 50 ms): a walk with one lstat per file, no reads, no writes.
func BenchmarkCheckpointUnchanged10k(b *testing.B) {
	root := workspace(b, 10_000)
	s := Open(filepath.Join(b.TempDir(), "snap"), Options{})
	ctx := context.Background()
	first, err := s.Take(ctx, []string{root})
	if err != nil {
		b.Fatal(err)
	}
	cpu := cpuTime(b)
	for b.Loop() {
		res, err := s.Take(ctx, []string{root})
		if err != nil {
			b.Fatal(err)
		}
		if res.Roots[0].Manifest != first.Roots[0].Manifest {
			b.Fatal("an unchanged workspace got a new manifest")
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkRewind300 is the cost of restoring 300 changed files of a
// 10,000-file workspace: the snapshot of the current state (300 files to
// hash and store), the plan, and writing the 300 files back.
func BenchmarkRewind300(b *testing.B) {
	root := workspace(b, 10_000)
	s := Open(filepath.Join(b.TempDir(), "snap"), Options{})
	ctx := context.Background()
	base, err := s.Take(ctx, []string{root})
	if err != nil {
		b.Fatal(err)
	}
	target, err := s.Load(base.Roots[0].Manifest)
	if err != nil {
		b.Fatal(err)
	}
	round := 0
	cpu := cpuTime(b)
	for b.Loop() {
		b.StopTimer()
		round++
		for i := range 300 {
			write(b, root, fmt.Sprintf("pkg%03d/file%03d.go", i/3, i%3), fmt.Sprintf("changed %d %d\n", round, i))
		}
		b.StartTimer()
		res, err := s.Take(ctx, []string{root})
		if err != nil {
			b.Fatal(err)
		}
		cur, err := s.Load(res.Roots[0].Manifest)
		if err != nil {
			b.Fatal(err)
		}
		p, err := s.PlanRestore(cur, target)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Ops) != 300 {
			b.Fatalf("ops = %d", len(p.Ops))
		}
		if err := s.Apply(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// cpuTime is the CPU time (user and system) the process has used. On the
// shared 2-core machine the wall-clock time of a benchmark follows the
// load; the CPU time it costs says more about the code.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start (the timer
// stopped or not: for Rewind300 it includes writing the 300 changes).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N)/1e6, "cpu-ms/op")
}
