package main

import (
	"github.com/elastico/elastico"
	"github.com/elastico/elastico/pds"
	"github.com/elastico/elastico/sim"
)

// oracleBound is what elastico-oracle knows that no real scheduler does.
const oracleBound = "a perfect predictor"

// oraclePDS is elastico-oracle: pds with every default but its predictor,
// which answers the ground truth's own slowdowns (sim.Oracle). It shows how
// far the shipped predictor is from a perfect one; it reads the ground
// truth, so the reports label it a bound, and it is never a default policy.
var oraclePDS = sim.ReadingTruth(oracleBound, func(t *sim.Truth) (elastico.Scheduler, error) {
	o, err := sim.NewOracle(t)
	if err != nil {
		return nil, err
	}
	return pds.New(pds.Config{Predictor: o})
})
