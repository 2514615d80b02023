package sets

import "testing"

func TestSubsetAndEqual(t *testing.T) {
	tests := []struct {
		name              string
		a, b              []string
		wantSub, wantSame bool
	}{
		{"same order", []string{"g0", "g1"}, []string{"g0", "g1"}, true, true},
		{"other order", []string{"g1", "g0"}, []string{"g0", "g1"}, true, true},
		{"grown", []string{"g0"}, []string{"g0", "g1"}, true, false},
		{"moved", []string{"g2"}, []string{"g0", "g1"}, false, false},
		{"same size, other GPU", []string{"g0", "g2"}, []string{"g0", "g1"}, false, false},
		{"empty", nil, []string{"g0"}, true, false},
	}
	for _, tc := range tests {
		if got := Subset(tc.a, tc.b); got != tc.wantSub {
			t.Errorf("%s: Subset = %v, want %v", tc.name, got, tc.wantSub)
		}
		if got := Equal(tc.a, tc.b); got != tc.wantSame {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.wantSame)
		}
	}
}
