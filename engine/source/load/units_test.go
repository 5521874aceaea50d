package load

import (
	"testing"
)

func TestParseSizeReadsDockerUnits(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // -1: invalid
	}{
		{"1024", 1024},
		{"1024b", 1024},
		{"512k", 512 << 10},
		{"512KB", 512 << 10},
		{"64M", 64 << 20},
		{"64m", 64 << 20},
		{"64MiB", 64 << 20},
		{"64mb", 64 << 20},
		{"64 M", 64 << 20},
		{"1G", 1 << 30},
		{"1.5G", 3 << 29},
		{"1.5gi", 3 << 29},
		{"", -1},
		{"M", -1},
		{"64X", -1},
		{"64i", -1},
		{"64bb", -1},
		{"-1M", -1},
		{"1.G", -1},
		{"99999999999G", -1},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, p := parseSize(tt.in)
			if tt.want < 0 {
				if p == nil {
					t.Errorf("%q = %d, want an error", tt.in, got)
				}
				return
			}
			if p != nil || got != tt.want {
				t.Errorf("%q = %d, %v; want %d", tt.in, got, p, tt.want)
			}
		})
	}
}
