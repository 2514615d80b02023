// Command embed is a cluster manager's loop in about 40 lines: build a
// State, call Epoch, apply the Plan, keep its Carry for the next one. It
// prints what a real host would do; go run ./examples/embed.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/pds"
)

func main() {
	sched, err := pds.New(pds.Config{}) // every default: esp, placement, iac
	if err != nil {
		log.Fatal(err)
	}
	st := elastico.State{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Cluster: cluster(), Jobs: training()}
	for epoch := 1; epoch <= 3; epoch++ {
		if epoch == 2 { // a burst of inference arrives
			st.Jobs = append(st.Jobs, service("chat-1"), service("chat-2"))
		}
		if epoch == 3 { // and passes
			st.Jobs = st.Jobs[:2]
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		plan, err := sched.Epoch(ctx, &st)
		cancel()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("epoch %d (%d rounds, %v):\n", epoch, plan.Stats.Rounds, plan.Stats.Total.Round(time.Microsecond))
		for _, a := range plan.Actions { // preemptions, then moves, then starts
			fmt.Printf("  %v\n      %v\n", a, a.Launch.Env())
		}
		for i, d := range plan.Decisions {
			if d.Assignment == nil {
				fmt.Printf("  %s waits: %v\n", d.JobID, d.Status)
			}
			st.Jobs[i].Running = d.Assignment // the host applied the actions
		}
		st.Carry = plan.Carry
		st.Now = st.Now.Add(5 * time.Second)
	}
}
