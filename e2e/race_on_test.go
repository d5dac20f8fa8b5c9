//go:build race

package e2e

// raceBuild: the tests run under -race, so the dsh binary they drive is
// built with -race too (a race in the binary is what the e2e suite is
// best placed to find).
const raceBuild = true

// raceMemFactor scales the memory bounds the tests hold the binary to: the
// race runtime's shadow memory multiplies RSS (about 2.2x for the 64 MiB
// frame of TestBadInput). The bounds still catch memory that grows with
// the input.
const raceMemFactor = 3

// raceSlowdown scales the deadlines of waits on the binary's work: the
// race runtime makes dsh about ten times slower on big payloads (the
// 8 MiB prompt of TestBadInput: 1.6 s without -race, 16 s with).
const raceSlowdown = 4
