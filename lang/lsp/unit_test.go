package lsp

import (
	"encoding/json"
	"maps"
	"math/rand"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"go.lsp.dev/protocol"
)

// TestMapper checks the conversion between byte offsets and LSP positions,
// which count UTF-16 code units: é is one unit in two bytes, 😀 two units in
// four bytes.
func TestMapper(t *testing.T) {
	src := "ab\né😀x\n\nlast"
	tests := []struct {
		off  int
		line uint32
		char uint32
	}{
		{0, 0, 0},
		{2, 0, 2},
		{3, 1, 0},
		{5, 1, 1},  // after é
		{9, 1, 3},  // after 😀
		{10, 1, 4}, // after x
		{11, 2, 0},
		{12, 3, 0},
		{16, 3, 4},
	}
	m := newMapper([]byte(src))
	for _, tt := range tests {
		p := m.position(tt.off)
		if p.Line != tt.line || p.Character != tt.char {
			t.Errorf("position(%d) = %d:%d, want %d:%d", tt.off, p.Line, p.Character, tt.line, tt.char)
		}
		if off := m.offset(p); off != tt.off {
			t.Errorf("offset(%d:%d) = %d, want %d", p.Line, p.Character, off, tt.off)
		}
	}
	clamped := []struct {
		pos  protocol.Position
		want int
	}{
		{protocol.Position{Line: 0, Character: 99}, 2}, // past the end of a line
		{protocol.Position{Line: 99, Character: 0}, len(src)},
		{protocol.Position{Line: 1, Character: 2}, 9}, // inside 😀: after it
	}
	for _, tt := range clamped {
		if got := m.offset(tt.pos); got != tt.want {
			t.Errorf("offset(%d:%d) = %d, want %d", tt.pos.Line, tt.pos.Character, got, tt.want)
		}
	}
	if p := m.position(-5); p != (protocol.Position{}) {
		t.Errorf("position(-5) = %v, want 0:0", p)
	}
}

// TestApplyChanges checks incremental and whole-text changes.
func TestApplyChanges(t *testing.T) {
	rng := func(l1, c1, l2, c2 uint32) *protocol.Range {
		return &protocol.Range{Start: protocol.Position{Line: l1, Character: c1}, End: protocol.Position{Line: l2, Character: c2}}
	}
	tests := []struct {
		name    string
		text    string
		changes []changeEvent
		want    string
	}{
		{"insert", "abc", []changeEvent{{Range: rng(0, 1, 0, 1), Text: "X"}}, "aXbc"},
		{"delete across lines", "ab\ncd\nef", []changeEvent{{Range: rng(0, 1, 2, 1), Text: ""}}, "af"},
		{"after an emoji", "# 😀\nx", []changeEvent{{Range: rng(0, 4, 0, 4), Text: "!"}}, "# 😀!\nx"},
		{"replace all", "old", []changeEvent{{Text: "new"}}, "new"},
		{"in order", "abc", []changeEvent{{Range: rng(0, 0, 0, 1), Text: "xy"}, {Range: rng(0, 3, 0, 4), Text: ""}}, "xyb"},
		{"reversed range", "abcd", []changeEvent{{Range: rng(0, 3, 0, 1), Text: "-"}}, "a-d"},
		{"past the end", "ab", []changeEvent{{Range: rng(5, 0, 9, 9), Text: "!"}}, "ab!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(applyChanges([]byte(tt.text), tt.changes)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParseSettings checks the accepted forms of tec.defines.
func TestParseSettings(t *testing.T) {
	tests := []struct {
		json string
		want map[string]string
		err  string // in the error; "" for none
	}{
		{`null`, nil, ""},
		{`{}`, nil, ""},
		{`{"tec": {"defines": {"N": "16", "D": 64}}}`, map[string]string{"N": "16", "D": "64"}, ""},
		{`{"defines": ["N=16", " D = 0.5 "]}`, map[string]string{"N": "16", "D": "0.5"}, ""},
		{`{"tec.defines": {"N": 2}}`, map[string]string{"N": "2"}, ""},
		{`{"tec": {"path": "tec"}}`, nil, ""},
		{`{"defines": ["N"]}`, nil, `want NAME=VALUE, got "N"`},
		{`{"defines": {"N": true}}`, nil, "the value of N must be a number or a string"},
		{`[1]`, nil, "the settings must be an object"},
		{`"tec"`, nil, "the settings must be an object ({\"tec\": {\"defines\": {...}}}), got a string"},
		{`{"tec": 7}`, nil, "the setting tec must be an object ({\"defines\": {...}}), got 7"},
		{`{"tec": [true]}`, nil, "got an array"},
	}
	for _, tt := range tests {
		got, err := parseSettings(json.RawMessage(tt.json))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) || !maps.Equal(got, tt.want) {
			t.Errorf("parseSettings(%s) = %v, %v; want %v, error %q", tt.json, got, err, tt.want, tt.err)
		}
		if err != nil && strings.Contains(err.Error(), "json:") {
			t.Errorf("parseSettings(%s): %v speaks of Go", tt.json, err)
		}
	}
}

// TestCancel cancels a hover that waits for the check of a large edit and
// expects the protocol's RequestCancelled error, and then a hover that
// answers.
func TestCancel(t *testing.T) {
	c := startServer(t, Options{Debounce: time.Hour}) // no diagnostics: only the hover checks
	dir := t.TempDir()
	c.initialize(dir, nil)
	text := bigFile(6000)
	u := pathURI(dir + "/big.te")
	c.open(u, text)
	params := map[string]any{"textDocument": map[string]any{"uri": u}, "position": posOf(t, text, "t900[i, j]", 1, 1)}
	id, ch := c.start("textDocument/hover", params)
	c.notify("$/cancelRequest", map[string]any{"id": id})
	select {
	case m := <-ch:
		if m.Error == nil || m.Error.Code != -32800 {
			t.Errorf("cancelled hover: got %s %+v, want error -32800", m.Result, m.Error)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no response to the cancelled hover")
	}
	res, err := c.call("textDocument/hover", params)
	if err != nil || len(res) < 10 {
		t.Errorf("hover after the cancellation: %s, %v", res, err)
	}
	if err := c.shutdown(); err != nil {
		t.Error(err)
	}
}

// TestMapperMatchesWalk checks position, which looks up the code units a
// line's multi-byte sequences save, against decoding the line up to the
// offset, at every offset of texts with ASCII, two-, three- and four-byte
// sequences, bytes that are not UTF-8 and truncated sequences.
func TestMapperMatchesWalk(t *testing.T) {
	walk := func(src []byte, lines []int, off int) protocol.Position {
		line := 0
		for line+1 < len(lines) && lines[line+1] <= off {
			line++
		}
		units := 0
		for i := lines[line]; i < off; {
			r, n := utf8.DecodeRune(src[i:off])
			if w := utf16.RuneLen(r); w > 0 {
				units += w
			} else {
				units++
			}
			i += n
		}
		return protocol.Position{Line: uint32(line), Character: uint32(units)}
	}
	pieces := []string{"a", "xy", "é", "€", "😀", "\n", "\r\n", "\xff", "\xe2\x82", "\xf0\x9f\x98", "\xc3", " + "}
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 200; n++ {
		var b strings.Builder
		for k := rng.Intn(40); k > 0; k-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		src := []byte(b.String())
		m := newMapper(src)
		for off := 0; off <= len(src); off++ {
			if got, want := m.position(off), walk(src, m.lines, off); got != want {
				t.Fatalf("%q: position(%d) = %v, want %v", src, off, got, want)
			}
		}
	}
}
