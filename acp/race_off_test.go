//go:build !race

package acp

// hugeWrite: see race_on_test.go.
const hugeWrite = 12 << 20
