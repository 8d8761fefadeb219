package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Errorf and Fatalf instead of
// failing the test.
type recorder struct {
	testing.TB
	errored, fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) { r.errored = fmt.Sprintf(format, args...) }

func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func (r *recorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...) }

// TestCheck checks Check on an equal file, a differing one and a missing
// one, with and without -update.
func TestCheck(t *testing.T) {
	const cmd = "go test ./internal/testkit/golden -run '^TestCheck$' -update"
	tests := []struct {
		name    string
		file    string // the golden file's content; "" for none
		got     string
		update  bool
		ok      bool
		errored []string // in the failure, or none
		fatal   string   // in the fatal failure, or ""
	}{
		{"equal", "a\nb\n", "a\nb\n", false, true, nil, ""},
		{"differing", "a\nb\nc\n", "a\nB\nc\n", false, false,
			[]string{"out.golden differs from the output (-", "from line 2:\n-b\n+B\n", "to accept the output: " + cmd}, ""},
		{"missing", "", "a\n", false, false, nil, "to create it: " + cmd},
		{"update writes", "", "a\n", true, true, nil, ""},
		{"update rewrites", "a\nb\n", "a\nB\n", true, true, nil, ""},
	}
	defer flag.Set("update", strconv.FormatBool(*update))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "out.golden")
			if tt.file != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := flag.Set("update", strconv.FormatBool(tt.update)); err != nil {
				t.Fatal(err)
			}
			r := &recorder{TB: t}
			if ok := CheckString(r, path, tt.got); ok != tt.ok {
				t.Errorf("Check = %v, want %v", ok, tt.ok)
			}
			for _, want := range tt.errored {
				if !strings.Contains(r.errored, want) {
					t.Errorf("failed with %q, want %q in it", r.errored, want)
				}
			}
			if tt.errored == nil && r.errored != "" {
				t.Errorf("failed with %q, want no failure", r.errored)
			}
			if tt.fatal == "" && r.fatal != "" || !strings.Contains(r.fatal, tt.fatal) {
				t.Errorf("ended with %q, want %q", r.fatal, tt.fatal)
			}
			if tt.update {
				if b, err := os.ReadFile(path); err != nil || string(b) != tt.got {
					t.Errorf("-update wrote %q (%v), want %q", b, err, tt.got)
				}
			}
		})
	}
}

// TestDiff checks that Diff leaves out the lines both sides start and end
// with and shows at most maxLines of each side.
func TestDiff(t *testing.T) {
	many := strings.Repeat("x\n", maxLines+3)
	tests := []struct {
		name, want, got, diff string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one line", "a\nb\nc\n", "a\nB\nc\n", "from line 2:\n-b\n+B\n"},
		{"inserted", "a\nc\n", "a\nb1\nb2\nc\n", "from line 2:\n+b1\n+b2\n"},
		{"removed", "a\nb\nc\n", "a\nc\n", "from line 2:\n-b\n"},
		{"no final newline", "a\n", "a", "from line 2:\n-\n"},
		{"first line", "a\n", "b\n", "from line 1:\n-a\n+b\n"},
		{"long", "a\n", "a\n" + many, "from line 2:\n" + strings.Repeat("+x\n", maxLines) + "+ ... and 3 more lines\n"},
	}
	for _, tt := range tests {
		if got := Diff(tt.want, tt.got); got != tt.diff {
			t.Errorf("%s: Diff(%q, %q) = %q, want %q", tt.name, tt.want, tt.got, got, tt.diff)
		}
	}
}
