// Package esp is elastic shadow pricing (the paper's ESP): the default
// [elastico.PriceSolver], which picks one configuration per job, or none,
// so that the total demand fits the effective capacity and
// Σ_j w_j·G̃_j(c_j) − Γ_j(c_j) is as large as it can make it.
//
// [New] returns a [Solver]. Its Solve runs tâtonnement on one shadow price
// per resource, starting from the previous epoch's prices
// (Market.Prices): each job answers the prices with its best option,
// argmax_c w·G̃ − λ·R̂ − Γ with demands R̂ normalized by capacity, or defers
// when nothing has positive surplus; then each price moves with the excess
// demand of its resource, λ_r ← max(0, λ_r + η_t·P_r·(ΣR̂_r − 1)),
// η_t = η0/√t (see [Config.Eta0] for the scale P_r). Best responses are
// computed in parallel above [Config.ParallelThreshold] bidders, with the
// same answer bit for bit. From a warm start it usually stops after 2–8 iterations.
//
// Prices alone rarely give a choice that fits, so a repair step downsizes
// or defers the jobs that lose the least value per unit of an
// over-demanded resource until the choice fits (a returned choice never
// exceeds capacity); a greedy pass then spends what the repair left, and on
// small markets an exchange search tries moving one job at a time.
//
// [Exact] solves small markets exactly (branch and bound on Lagrangian
// bounds): tests and benchmarks measure Solvers against it; [Bound] gives
// the Lagrangian upper bound that measures them on markets too large for
// it. Package [github.com/elastico/elastico/esp/esptest] holds the
// conformance suite every PriceSolver can run and the random markets it
// uses.
package esp
