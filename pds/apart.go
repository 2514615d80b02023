package pds

import (
	"fmt"
	"strings"
)

// keptApart says which jobs j is kept apart from, and why.
func (e *epoch) keptApart(j int32) string {
	if e.apartFirst[j] == 0 {
		// Most jobs the placer leaves out (thousands at scale) are in no
		// pair: not a Builder each.
		return ""
	}
	var b strings.Builder
	for i := e.apartFirst[j]; i != 0; i = e.nextPair(i, j) {
		p := e.avoid[i-1]
		if !e.inForce(p) {
			continue
		}
		other := p.a + p.b - j
		v := p.viol
		if v.victim != j {
			// Say it from j's side.
			v.victim, v.aggressor, v.sv, v.sa, v.cv, v.ca = v.aggressor, v.victim, v.sa, v.sv, v.ca, v.cv
		}
		fmt.Fprintf(&b, "; kept apart from job %q (%s)", e.jobs[other].job.ID, v.lim.Why(v.sv, v.sa, v.cv, v.ca))
	}
	return b.String()
}

// inForce reports whether pair p was kept apart in the last placement:
// both placed under the configurations they violated under.
func (rs *roundState) inForce(p avoidPair) bool {
	a, b := rs.jobItem[p.a], rs.jobItem[p.b]
	return a >= 0 && b >= 0 && rs.itemFam[a] == p.ka && rs.itemFam[b] == p.kb
}

// avoidPair is a violating pair: jobs a and b under family indices ka and
// kb, and the violation check found.
type avoidPair struct {
	a, b, ka, kb int32
	viol         violation
	next         [2]int32 // the next pair of a and of b (see apartFirst)
}

// nextPair returns the pair after pair i (index+1) among job j's, or 0.
func (rs *roundState) nextPair(i, j int32) int32 {
	p := &rs.avoid[i-1]
	if p.a == j {
		return p.next[0]
	}
	return p.next[1]
}

// linkPair appends pair i (index+1) to job j's pairs.
func (rs *roundState) linkPair(i, j int32) {
	if last := rs.apartLast[j]; last == 0 {
		rs.apartFirst[j] = i
	} else if p := &rs.avoid[last-1]; p.a == j {
		p.next[0] = i
	} else {
		p.next[1] = i
	}
	rs.apartLast[j] = i
}

// separate keeps a violating pair apart in every later placement of the
// epoch in which both keep the configurations they violated under: the
// penalty asks the market for other configurations, this asks the placer
// for other neighbours, and together they settle in fewer rounds.
func (rs *roundState) separate(r *result, v violation) {
	a, b := min(v.victim, v.aggressor), max(v.victim, v.aggressor)
	p := avoidPair{a: a, b: b, ka: r.choice[a], kb: r.choice[b], viol: v}
	for i := rs.apartFirst[a]; i != 0; i = rs.nextPair(i, a) {
		if q := &rs.avoid[i-1]; q.a == a && q.b == b && q.ka == p.ka && q.kb == p.kb {
			return
		}
	}
	rs.avoid = append(rs.avoid, p)
	i := int32(len(rs.avoid))
	rs.linkPair(i, a)
	if b != a {
		rs.linkPair(i, b)
	}
}
