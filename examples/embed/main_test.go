package main

import "testing"

// TestMain runs the loop: it must not fail with the default scheduler.
func TestRun(t *testing.T) { main() }
