package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
)

// writeLog records each Write, so that a test sees whether output came in
// pieces as it was produced or all at once at the end.
type writeLog struct{ writes []string }

func (w *writeLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writeLog) String() string { return strings.Join(w.writes, "") }

// TestGenerateStreams checks that tec generate says what it runs before it
// runs, writes a single sequence's tokens one by one as the runs give them
// (the line is the one printed at the end otherwise), and on a terminal
// shows each run as it ends on stderr (issue 23: 9.5 s of silence, even
// the header, on a mid-size simulator run).
func TestGenerateStreams(t *testing.T) {
	for _, device := range [][]string{{"--device", "ref"}, {"--device", "sim", "-O4"}} {
		t.Run(device[1], func(t *testing.T) {
			var out writeLog
			var errb bytes.Buffer
			e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" },
				isTerminal: func(w io.Writer) bool { return w == &errb }}
			args := []string{"generate", llamaFile, "--fill", "random", "--steps", "3", "-D", "B=1"}
			for _, f := range llamaTiny(t) {
				if strings.HasPrefix(f, "B=") {
					args = args[:len(args)-1] // its -D: B is 1 here
					continue
				}
				args = append(args, f)
			}
			if code := e.main(append(args, device...)); code != exitOK {
				t.Fatalf("status %d\n%s", code, errb.String())
			}
			if len(out.writes) == 0 || !strings.HasPrefix(out.writes[0], "models prefill and decode on ") {
				t.Fatalf("the first write is not the header: %q", out.writes)
			}
			var tokens []string
			for _, w := range out.writes {
				if regexp.MustCompile(`^ \d+$`).MatchString(w) {
					tokens = append(tokens, w)
				}
			}
			if len(tokens) != 4 {
				t.Errorf("%d tokens written one at a time, want 4 (the prefill's and 3 steps'): %q", len(tokens), out.writes)
			}
			if !regexp.MustCompile(`(?m)^sequence 0:( \d+){4}\n`).MatchString(out.String()) {
				t.Errorf("no line of 4 tokens:\n%s", out.String())
			}
			for _, want := range []string{"prefill done (", "decode step 3/3 done ("} {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("stderr lacks %q: %q", want, errb.String())
				}
			}
			if !strings.HasSuffix(errb.String(), "\r\x1b[K") {
				t.Errorf("the progress line is not cleared at the end: %q", errb.String())
			}
		})
	}
}
