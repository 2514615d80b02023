//go:build linux

package profiler

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat. The kernel
// exports USER_HZ = 100 to user space on every architecture Go supports.
const userHZ = 100

// procStat is what the profiler needs from /proc/<pid>/stat.
type procStat struct {
	ppid     int
	ticks    uint64 // utime + stime + cutime + cstime
	rssPages int64
}

// parseStat parses the contents of /proc/<pid>/stat. The command name (the
// second field) is in parentheses and may hold spaces and parentheses, so
// the fields are counted from the last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("no ')' after the command name")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); field k is f[k-3].
	if len(f) < 22 {
		return procStat{}, errors.New("too few fields")
	}
	num := func(k int) (int64, error) { return strconv.ParseInt(string(f[k-3]), 10, 64) }
	var s procStat
	ppid, err := num(4)
	if err != nil {
		return s, err
	}
	s.ppid = int(ppid)
	for k := 14; k <= 17; k++ {
		t, err := num(k)
		if err != nil {
			return s, err
		}
		if t > 0 {
			s.ticks += uint64(t)
		}
	}
	if s.rssPages, err = num(24); err != nil {
		return s, err
	}
	return s, nil
}

// treeUsage sums the CPU time and resident memory of root and its
// descendants. Each process's CPU time includes its reaped children's, so a
// worker that has exited is still counted, once.
func treeUsage(root int, procs map[int]procStat, pageSize int) (pids []int, cpuSeconds, rssGiB float64) {
	children := make(map[int][]int, len(procs))
	for pid, s := range procs {
		children[s.ppid] = append(children[s.ppid], pid)
	}
	var ticks uint64
	var pages int64
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		s, ok := procs[pid]
		if !ok {
			continue
		}
		pids = append(pids, pid)
		ticks += s.ticks
		pages += s.rssPages
		stack = append(stack, children[pid]...)
	}
	return pids, float64(ticks) / userHZ, float64(pages) * float64(pageSize) / (1 << 30)
}

// processTreeUsage reads /proc for the process tree under pid.
func processTreeUsage(pid int) (pids []int, cpuSeconds, rssGiB float64, ok bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pid}, 0, 0, false
	}
	procs := make(map[int]procStat, len(ents))
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		if s, err := parseStat(b); err == nil {
			procs[p] = s
		}
	}
	if _, found := procs[pid]; !found {
		return []int{pid}, 0, 0, false
	}
	pids, cpuSeconds, rssGiB = treeUsage(pid, procs, os.Getpagesize())
	return pids, cpuSeconds, rssGiB, true
}
