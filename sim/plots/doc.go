// Package plots draws an [sim.Outcome] as PNG plots: the CDF of job
// completion times, SM utilization over time and queueing delay by arrival
// order ([Write]).
//
// It is apart from package sim so that a program that simulates, or a
// scheduler that embeds sim's types, does not link the plotting library
// (gonum.org/v1/plot and its fonts, LaTeX and PDF packages); examples/replay
// imports it to write its plots.
package plots
