// Package esp is elastic shadow pricing (DESIGN.md 3.2): the default
// [elastico.PriceSolver], which picks one configuration per job, or none,
// so that the total demand fits the effective capacity and Σ_j w_j·G̃_j(c_j)
// − Γ_j(c_j) is as large as it can make it.
//
// [New] returns a [Solver]. Its Solve runs tâtonnement on one shadow price
// per resource: each job answers the prices with its best option (argmax_c
// w·G̃ − λ·R̂ − Γ, demands R̂ normalized by capacity, deferral when nothing
// has positive surplus), prices rise where demand exceeds capacity and fall
// where it does not (λ ← max(0, λ + η_t·S·(ΣR̂ − 1)), η_t = η0/√t), starting
// from the previous epoch's prices. Then a repair step downsizes or defers
// the jobs that lose least per unit of an over-demanded resource, so the
// answer never exceeds capacity, and a greedy pass (with, on small markets,
// an exchange local search) spends what the repair left. Best responses are
// computed in parallel above [Config.ParallelThreshold] bidders; the answer
// is the same bit for bit with any number of workers.
//
// [Exact] solves small markets exactly (branch and bound on Lagrangian
// bounds); tests and benchmarks measure Solvers against it. Package
// [github.com/elastico/elastico/esp/esptest] holds the conformance suite
// every PriceSolver can run, and the random markets it uses.
package esp
