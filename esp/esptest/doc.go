// Package esptest checks that an [elastico.PriceSolver] keeps the
// interface's promises: [Run] is a conformance suite any implementation can
// run from its own tests,
//
//	func TestConformance(t *testing.T) {
//		esptest.Run(t, func() elastico.PriceSolver { return mysolver.New() })
//	}
//
// and [Generate], [Perturb] and [Quality] give the seeded random markets and
// the comparison with esp.Exact that tests and benchmarks share.
package esptest
