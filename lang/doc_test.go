package lang

import (
	"os"
	"strings"
	"testing"
)

// docBlock is a fenced code block of docs/language.md.
type docBlock struct {
	tag  string // "te", "te-error", "" ...
	text string
	line int
}

func docBlocks(t testing.TB) []docBlock {
	src, err := os.ReadFile("../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	lines := strings.Split(string(src), "\n")
	for i := 0; i < len(lines); i++ {
		tag, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		b := docBlock{tag: strings.TrimSpace(tag), line: i + 1}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		b.text = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks
}

// TestLanguageDoc checks every `te` block of the language reference, and
// that every `te-error` block fails with the diagnostics of the plain block
// that follows it.
func TestLanguageDoc(t *testing.T) {
	blocks := docBlocks(t)
	var nte, nerr int
	for i, b := range blocks {
		switch b.tag {
		case "te":
			nte++
			p, ds := Check("example.te", []byte(b.text), Config{})
			if ds.HasErrors() || p == nil {
				t.Errorf("language.md:%d: the example does not check:\n%s", b.line, render("example.te", []byte(b.text), ds))
			}
		case "te-error":
			nerr++
			_, ds := Check("example.te", []byte(b.text), Config{})
			got := render("example.te", []byte(b.text), ds)
			if i+1 >= len(blocks) || blocks[i+1].tag != "" {
				t.Errorf("language.md:%d: a te-error block must be followed by a plain block with the expected error", b.line)
				continue
			}
			if want := blocks[i+1].text; got != want {
				t.Errorf("language.md:%d: wrong diagnostics:\n--- got\n%s--- want\n%s", b.line, got, want)
			}
		}
	}
	if nte < 8 || nerr < 4 {
		t.Errorf("found %d te blocks and %d te-error blocks; the extraction is broken", nte, nerr)
	}
}
