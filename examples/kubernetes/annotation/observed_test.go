package annotation

import (
	"strings"
	"testing"
	"time"
)

func TestParseObserved(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 4, 0, 0, time.UTC)
	full := func(rate, since, gen string) map[string]string {
		return map[string]string{ObservedRate: rate, ObservedSince: since, ObservedGeneration: gen, Job: "{}"}
	}
	tests := []struct {
		name    string
		ann     map[string]string
		want    Observed
		ok      bool
		wantErr string
	}{
		{name: "none", ann: map[string]string{Job: "{}"}},
		{name: "all three", ann: full("412.5", "2026-03-01T12:04:00Z", "3"), want: Observed{412.5, at, 3}, ok: true},
		{name: "an offset and fractions of a second", ann: full("1e3", "2026-03-01T13:04:00.25+01:00", "1"),
			want: Observed{1000, at.Add(250 * time.Millisecond), 1}, ok: true},
		{name: "a zero rate (a stalled job)", ann: full("0", "2026-03-01T12:04:00Z", "2"), want: Observed{0, at, 2}, ok: true},
		{name: "rate alone", ann: map[string]string{ObservedRate: "5"}, ok: true,
			wantErr: "elastico.io/observed-rate is set but elastico.io/observed-since is missing"},
		{name: "no generation", ann: map[string]string{ObservedRate: "5", ObservedSince: "2026-03-01T12:04:00Z"}, ok: true,
			wantErr: "elastico.io/observed-generation is missing"},
		{name: "rate not a number", ann: full("fast", "2026-03-01T12:04:00Z", "3"), ok: true, wantErr: `elastico.io/observed-rate is "fast"`},
		{name: "rate NaN", ann: full("NaN", "2026-03-01T12:04:00Z", "3"), ok: true, wantErr: `elastico.io/observed-rate is "NaN"`},
		{name: "rate infinite", ann: full("+Inf", "2026-03-01T12:04:00Z", "3"), ok: true, wantErr: `elastico.io/observed-rate is "+Inf"`},
		{name: "rate negative", ann: full("-1", "2026-03-01T12:04:00Z", "3"), ok: true, wantErr: `elastico.io/observed-rate is "-1"`},
		{name: "since in Unix seconds", ann: full("5", "1772366640", "3"), ok: true, wantErr: `elastico.io/observed-since is "1772366640", want an RFC 3339 time`},
		{name: "since without a zone", ann: full("5", "2026-03-01T12:04:00", "3"), ok: true, wantErr: "elastico.io/observed-since"},
		{name: "generation zero", ann: full("5", "2026-03-01T12:04:00Z", "0"), ok: true, wantErr: `elastico.io/observed-generation is "0"`},
		{name: "generation not a number", ann: full("5", "2026-03-01T12:04:00Z", "v3"), ok: true, wantErr: `elastico.io/observed-generation is "v3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := ParseObserved(tt.ann)
			if ok != tt.ok {
				t.Errorf("ok = %v, want %v", ok, tt.ok)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "annotation: ") {
					t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Rate != tt.want.Rate || !got.Since.Equal(tt.want.Since) || got.Generation != tt.want.Generation {
				t.Errorf("ParseObserved = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestObservedRoundTrip(t *testing.T) {
	o := Observed{Rate: 1234.5678, Since: time.Date(2026, 3, 1, 13, 4, 5, 6e8, time.FixedZone("CET", 3600)), Generation: 7}
	got, ok, err := ParseObserved(o.Annotations())
	if err != nil || !ok {
		t.Fatalf("ParseObserved(%v) = %v, %v", o.Annotations(), ok, err)
	}
	if got.Rate != o.Rate || !got.Since.Equal(o.Since) || got.Generation != o.Generation {
		t.Errorf("round trip = %+v, want %+v", got, o)
	}
	if s := o.Annotations()[ObservedSince]; s != "2026-03-01T12:04:05.6Z" {
		t.Errorf("%s = %q, want UTC", ObservedSince, s)
	}
}
