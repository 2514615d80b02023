package sim

import "math"

// rates recomputes every productive job's speed and rate from the ground
// truth, and the cluster's current figures.
func (s *simulation) rates() {
	for g := range s.gpus {
		s.gpus[g].res = s.gpus[g].res[:0]
		s.gpus[g].held = false
	}
	s.waitingNow, s.runningNow = 0, 0
	for _, j := range s.active {
		if j.cfg < 0 {
			s.waitingNow++
			continue
		}
		s.runningNow++
		for _, g := range j.gpus {
			s.gpus[g].held = true
		}
		if s.now < j.busyUntil {
			continue
		}
		for _, g := range j.gpus {
			s.gpus[g].res = append(s.gpus[g].res, j)
		}
	}
	s.thrNow = 0
	for _, j := range s.active {
		j.prevRate = j.rate
		j.rate, j.speed = 0, 0
		if j.cfg < 0 || s.now < j.busyUntil {
			continue
		}
		c := &j.Configs[j.cfg]
		speed := 1.0
		for _, g := range j.gpus {
			// Every job on g runs a configuration of g's model (Capacity),
			// so their kinds are of g's ground truth.
			sp := 1.0
			truth := s.gpus[g].truth
			for _, k := range s.gpus[g].res {
				if k != j {
					sp *= truth.kindSpeed(c.Kind, k.Configs[k.cfg].Kind)
				}
			}
			speed = math.Min(speed, sp)
		}
		j.speed = speed
		j.shared = false
		for _, g := range j.gpus {
			if len(s.gpus[g].res) > 1 {
				j.shared = true
			}
		}
		j.rate = c.Goodput(j.spread) * speed
		s.thrNow += j.rate * j.norm
	}
	for _, j := range s.active {
		if j.rate != j.prevRate {
			j.rateSince = s.now
		}
	}
	sm := 0.0
	for g := range s.gpus {
		u := 0.0
		for _, k := range s.gpus[g].res {
			u += k.Configs[k.cfg].SM * k.speed
		}
		sm += math.Min(1, u)
	}
	// A GPU is busy when some job holds it, restarting or running.
	occupied := 0
	for g := range s.gpus {
		if s.gpus[g].held {
			occupied++
		}
	}
	s.smNow = sm / float64(len(s.gpus))
	s.busyNow = float64(occupied) / float64(len(s.gpus))
}

func (s *simulation) sample() {
	s.res.Series = append(s.res.Series, Sample{
		Time: s.now, SMUtil: s.smNow, Busy: s.busyNow, Throughput: s.thrNow,
		Running: s.runningNow, Waiting: s.waitingNow,
	})
}
