package main

import "testing"

func TestSuggestMaxTime(t *testing.T) {
	tests := []struct {
		secs float64
		want string
	}{
		{1, "1m"},
		{40, "1m"},
		{41, "2m"},
		{3600, "90m"},
		{5000, "3h"},
		{1e12, "1000000h"},
	}
	for _, tt := range tests {
		if got := suggestMaxTime(tt.secs); got != tt.want {
			t.Errorf("suggestMaxTime(%g) = %s, want %s", tt.secs, got, tt.want)
		}
	}
}
