//go:build !race

package e2e

// raceBuild: see race_on_test.go.
const raceBuild = false

// raceMemFactor: see race_on_test.go.
const raceMemFactor = 1

// raceSlowdown: see race_on_test.go.
const raceSlowdown = 1
