//go:build !race

package iac_test

const raceEnabled = false
