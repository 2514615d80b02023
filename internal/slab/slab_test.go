package slab

import "testing"

func TestZeroedAndResize(t *testing.T) {
	s := []int{1, 2, 3, 4}
	z := Zeroed(s, 3)
	if len(z) != 3 || &z[0] != &s[0] || z[0] != 0 || z[2] != 0 {
		t.Errorf("Zeroed(s, 3) = %v: want s's array, cleared", z)
	}
	s = []int{1, 2, 3, 4}
	r := Resize(s, 2)
	if len(r) != 2 || &r[0] != &s[0] || r[1] != 2 {
		t.Errorf("Resize(s, 2) = %v: want s's array, kept", r)
	}
	if g := Zeroed(s, 10); len(g) != 10 || cap(g) < 10 {
		t.Errorf("Zeroed(s, 10) has len %d", len(g))
	}
	if g := Resize([]int(nil), 5); len(g) != 5 {
		t.Errorf("Resize(nil, 5) has len %d", len(g))
	}
}
