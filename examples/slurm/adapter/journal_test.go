package adapter

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func TestJournalRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.json")
	j, err := loadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &Record{SlurmID: 12, Submit: 100, Arrival: 90, User: "alice", Name: "train", Spec: "train | sm=1 mem=1 tput=1",
		Phase: PhaseRelaunch, Gen: 2, ConfigID: "g1", GPUs: []string{"n/gpu0"}, Node: "n", Kind: "shard", Gres: "shard:gpu0:4", CPUs: 1,
		Env: []string{"A=1"}, RestartBase: 1, RequeuedAt: time.Unix(200, 0).UTC(),
		Launches: []Launch{{Gen: 1, Run: 0, ConfigID: "g1", GPUs: []string{"n/gpu0"}, Gres: "shard:gpu0:2", At: time.Unix(150, 0).UTC()}}}
	j.jobs[12] = r
	j.carry = elastico.Carry{Prices: elastico.Vector{0.5, 0, 0, 0}, Penalties: map[string]map[string]float64{"12": {"g1": 0.25}}}
	if err := j.save(); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	if err := j.save(); err != nil { // unchanged: not rewritten
		t.Fatal(err)
	}
	if again, _ := os.Stat(path); !again.ModTime().Equal(info.ModTime()) || again.Mode().Perm() != 0o600 {
		t.Errorf("unchanged journal rewritten, or mode %v", again.Mode())
	}
	back, err := loadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(j.jobs, back.jobs); diff != "" {
		t.Errorf("records (-saved +loaded):\n%s", diff)
	}
	if diff := cmp.Diff(j.carry, back.carry); diff != "" {
		t.Errorf("carry (-saved +loaded):\n%s", diff)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, ".*")); len(files) > 0 {
		t.Errorf("temp files left: %v", files)
	}
	os.WriteFile(path, []byte(`{"Version":2,"Jobs":[]}`), 0o600)
	if _, err := loadJournal(path); err == nil {
		t.Errorf("a journal of another version loaded")
	}
}
