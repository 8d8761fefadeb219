package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fence is a fenced code block of a markdown file.
type fence struct {
	info string // the text after the opening ```, e.g. "te-error attn.te"
	text string
	line int // of the opening fence, 1-based
}

// fences returns the fenced code blocks of markdown text.
func fences(md string) []fence {
	var out []fence
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		f := fence{info: strings.TrimSpace(info), line: i + 1}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		f.text = strings.Join(body, "\n") + "\n"
		out = append(out, f)
	}
	return out
}

// diagnosticLine matches the first line of a text diagnostic.
var diagnosticLine = regexp.MustCompile(`(?m)^\S+\.te:\d+:\d+: (error|warning)\[`)

// TestDocDiagnostics checks every diagnostic that README.md and docs/*.md
// show. Each must be a plain block right after a "te-error [FILE]" block
// holding the source; the test writes the source to FILE (example.te when
// none is named), runs "tec check FILE" as a user would and compares what
// it prints on standard error with the block, so that the docs show what
// tec prints.
func TestDocDiagnostics(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, "../../README.md")
	type example struct {
		where, file, src, want string
	}
	var examples []example
	for _, path := range docs {
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fs := fences(string(md))
		for i, f := range fs {
			where := filepath.Base(path) + ":" + strconv.Itoa(f.line)
			tag, file, _ := strings.Cut(f.info, " ")
			switch {
			case tag == "te-error":
				if i+1 >= len(fs) || fs[i+1].info != "" {
					t.Errorf("%s: a te-error block must be followed by a plain block with what tec check prints", where)
					continue
				}
				if file == "" {
					file = "example.te"
				}
				examples = append(examples, example{where, file, f.text, fs[i+1].text})
			case f.info == "" && diagnosticLine.MatchString(f.text) && (i == 0 || !strings.HasPrefix(fs[i-1].info, "te-error")):
				t.Errorf("%s: a diagnostic without its source: put the source in a te-error block before it, so that a test can check it", where)
			}
		}
	}
	if len(examples) < 6 {
		t.Fatalf("found %d examples: the extraction is broken", len(examples))
	}
	t.Chdir(t.TempDir())
	for _, ex := range examples {
		if err := os.WriteFile(ex.file, []byte(ex.src), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runTec(t, "check", ex.file)
		if code != exitUser {
			t.Errorf("%s: tec check %s: status %d, want %d", ex.where, ex.file, code, exitUser)
		}
		if stderr != ex.want {
			t.Errorf("%s: tec check %s prints\n%s\nbut the docs show\n%s", ex.where, ex.file, stderr, ex.want)
		}
		os.Remove(ex.file)
	}
}
