package annotation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Share is one gang member's part of the gang's assignment: its pod, the
// node it runs on and its device indices there.
type Share struct {
	Pod  string
	Node string
	GPUs []int
}

// Environment variables Env adds for a gang's member: its rank, the
// number of members, the pod of rank 0 (the rendezvous host: the pods'
// headless service names it), the replicas of the whole gang and the
// global rank of the member's first replica (torchrun's --node-rank,
// --nnodes, --master-addr, world size and rank offset).
const (
	EnvGangRank    = "ELASTICO_GANG_RANK"
	EnvGangMembers = "ELASTICO_GANG_MEMBERS"
	EnvGangLeader  = "ELASTICO_GANG_LEADER"
	EnvWorldSize   = "ELASTICO_WORLD_SIZE"
	EnvRankOffset  = "ELASTICO_RANK_OFFSET"
)

func gangSynthetic(key string) bool {
	switch key {
	case EnvGangRank, EnvGangMembers, EnvGangLeader, EnvWorldSize, EnvRankOffset:
		return true
	}
	return false
}

// gangEnv returns the gang variables of the member of rank r.
func gangEnv(gang []Share, r int) []string {
	world, offset := 0, 0
	for i, s := range gang {
		if i < r {
			offset += len(s.GPUs)
		}
		world += len(s.GPUs)
	}
	return []string{
		EnvGangRank + "=" + strconv.Itoa(r),
		EnvGangMembers + "=" + strconv.Itoa(len(gang)),
		EnvGangLeader + "=" + gang[0].Pod,
		EnvWorldSize + "=" + strconv.Itoa(world),
		EnvRankOffset + "=" + strconv.Itoa(offset),
	}
}

// FormatShares writes shares as GangShares carries them:
// "pod=node:i,j;pod=node:k".
func FormatShares(shares []Share) string {
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = s.Pod + "=" + s.Node + ":" + joinInts(s.GPUs)
	}
	return strings.Join(parts, ";")
}

// ParseShares reads GangShares back.
func ParseShares(v string) ([]Share, error) {
	if v == "" {
		return nil, fmt.Errorf("annotation: %s is empty", GangShares)
	}
	var out []Share
	for i, part := range strings.Split(v, ";") {
		pod, rest, ok1 := strings.Cut(part, "=")
		node, gpus, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || pod == "" || node == "" {
			return nil, fmt.Errorf("annotation: %s entry %d is %q, want pod=node:i,j", GangShares, i, part)
		}
		idx, err := parseInts(map[string]string{GangShares: gpus}, GangShares)
		if err != nil {
			return nil, fmt.Errorf("annotation: %s entry %d (%s): %w", GangShares, i, pod, err)
		}
		if slices.ContainsFunc(out, func(s Share) bool { return s.Pod == pod }) {
			return nil, fmt.Errorf("annotation: %s names pod %s twice", GangShares, pod)
		}
		out = append(out, Share{Pod: pod, Node: node, GPUs: idx})
	}
	return out, nil
}

// parseGang reads a gang member's rank and shares into d, and checks that
// the member's own node and GPUs are its share's.
func parseGang(ann map[string]string, d *Decision) error {
	v, has := ann[GangShares]
	_, hasRank := ann[GangRank]
	if !has && !hasRank {
		return nil
	}
	if !d.Admitted() {
		return fmt.Errorf("annotation: %s is set but %s is missing", GangShares, Config)
	}
	shares, err := ParseShares(v)
	if err != nil {
		return err
	}
	r, err := parseInt(ann, GangRank)
	if err != nil {
		return err
	}
	if int(r) >= len(shares) {
		return fmt.Errorf("annotation: %s is %d, %s lists %d members", GangRank, r, GangShares, len(shares))
	}
	if s := shares[r]; s.Node != d.Node || !slices.Equal(s.GPUs, d.Indices()) {
		return fmt.Errorf("annotation: %s entry %d is %s:%s, the pod's %s and %s say %s:%s", GangShares, r, s.Node, joinInts(s.GPUs), Node, GPUs, d.Node, joinInts(d.Indices()))
	}
	d.Rank, d.Gang = int(r), shares
	return nil
}

func sameShares(a, b []Share) bool {
	return slices.EqualFunc(a, b, func(x, y Share) bool {
		return x.Pod == y.Pod && x.Node == y.Node && slices.Equal(x.GPUs, y.GPUs)
	})
}
