//go:build race

package acp

// hugeWrite is the size of the file TestHugeWriteStaysUnderTheLineCap has
// the model write. Under the race detector 12 MiB of JSON work takes
// minutes, so the race build writes 1 MiB: still four times the bound on a
// call's shown arguments, so the same summaries are tested; the build
// without -race writes the 12 MiB that broke clients.
const hugeWrite = 1 << 20
