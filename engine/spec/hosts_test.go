package spec

import (
	"testing"
)

func TestBatchSize(t *testing.T) {
	tests := []struct {
		rule  string
		batch Batch
		hosts int
		want  int
	}{
		{"a count is a count", Batch{Count: 2}, 10, 2},
		{"a count may exceed the hosts", Batch{Count: 5}, 3, 5},
		{"a share rounds down", Batch{Share: 50}, 5, 2},
		{"a share of one host is that host", Batch{Share: 50}, 1, 1},
		{"a small share is at least one host", Batch{Share: 1}, 10, 1},
		{"100% is every host", Batch{Share: 100}, 7, 7},
		{"a zero batch is one host", Batch{}, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			if got := tt.batch.Size(tt.hosts); got != tt.want {
				t.Errorf("%s of %d hosts: %d per wave, want %d", tt.batch, tt.hosts, got, tt.want)
			}
		})
	}
	if s := (Batch{Share: 25}).String() + " " + (Batch{Count: 3}).String(); s != "25% 3" {
		t.Errorf("String: %q", s)
	}
}
