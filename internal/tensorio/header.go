package tensorio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// magic starts every .npy file; the format version's major and minor numbers
// follow it.
const magic = "\x93NUMPY"

const (
	// maxHeaderLen bounds the header length a reader accepts, so that a
	// corrupt length field cannot make it allocate gigabytes. NumPy itself
	// refuses headers over 10000 bytes by default.
	maxHeaderLen = 1 << 20

	// maxDepth bounds the nesting of tuples and lists in a header.
	maxDepth = 32

	// align is the alignment NumPy gives the start of the data.
	align = 64

	// growthDigits is the number of digits NumPy reserves for the first
	// dimension, padding the header with spaces so that it can grow the
	// array in place; we do the same so that our files are byte for byte
	// those of numpy.save.
	growthDigits = 21
)

// header is the parsed dictionary of a .npy header.
type header struct {
	major, minor int
	text         string // the dictionary, without padding, for messages
	descr        string // the dtype descriptor ("<f4"), or the raw text of a non-string descriptor
	fortran      bool
	shape        []int
}

// readHeader reads the magic string, version and header dictionary of a .npy
// stream.
func readHeader(r io.Reader) (*header, error) {
	var pre [len(magic) + 2]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("truncated header: %w", noEOF(err))
	}
	if string(pre[:len(magic)]) != magic {
		return nil, fmt.Errorf("not a .npy file: bad magic %q", pre[:len(magic)])
	}
	h := &header{major: int(pre[len(magic)]), minor: int(pre[len(magic)+1])}
	var n int
	switch h.major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("truncated header: %w", noEOF(err))
		}
		n = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("truncated header: %w", noEOF(err))
		}
		n64 := binary.LittleEndian.Uint32(b[:])
		if n64 > maxHeaderLen {
			return nil, fmt.Errorf("header length %d exceeds the limit of %d bytes", n64, maxHeaderLen)
		}
		n = int(n64)
	default:
		return nil, fmt.Errorf("unsupported format version %d.%d (want 1.0, 2.0 or 3.0)", h.major, h.minor)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("truncated header: %w", noEOF(err))
	}
	h.text = strings.TrimRight(string(buf), " \t\r\n\x00")
	if err := h.parse(); err != nil {
		return nil, fmt.Errorf("bad header %q: %w", h.text, err)
	}
	return h, nil
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: wherever it is read, the
// header is expected.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parse interprets h.text, a Python dictionary literal with the keys
// 'descr', 'fortran_order' and 'shape'.
func (h *header) parse() error {
	p := &parser{s: h.text}
	v, err := p.value(0)
	if err != nil {
		return err
	}
	p.space()
	if p.pos != len(p.s) {
		return fmt.Errorf("unexpected %q after the dictionary", p.rest())
	}
	d, ok := v.(pyDict)
	if !ok {
		return errors.New("not a dictionary")
	}
	seen := map[string]bool{}
	for _, kv := range d {
		if seen[kv.key] {
			return fmt.Errorf("duplicate key '%s'", kv.key)
		}
		seen[kv.key] = true
		switch kv.key {
		case "descr":
			if s, ok := kv.val.(string); ok {
				h.descr = s
			} else {
				h.descr = kv.raw
			}
		case "fortran_order":
			b, ok := kv.val.(bool)
			if !ok {
				return fmt.Errorf("'fortran_order' is %s, want True or False", kv.raw)
			}
			h.fortran = b
		case "shape":
			t, ok := kv.val.(pyTuple)
			if !ok {
				return fmt.Errorf("'shape' is %s, want a tuple of integers", kv.raw)
			}
			h.shape = make([]int, len(t))
			for i, x := range t {
				n, ok := x.(int64)
				if !ok || n < 0 || n > math.MaxInt {
					return fmt.Errorf("'shape' is %s, want a tuple of non-negative integers", kv.raw)
				}
				h.shape[i] = int(n)
			}
		default:
			return fmt.Errorf("unexpected key '%s'", kv.key)
		}
	}
	for _, k := range [...]string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return fmt.Errorf("missing key '%s'", k)
		}
	}
	return nil
}

// Python literal values: string, bool, int64, pyTuple, pyList, pyDict or nil
// (None).
type (
	pyTuple []any
	pyList  []any
	pyDict  []pyItem
)

// pyItem is one entry of a dictionary; raw is the source text of the value.
type pyItem struct {
	key string
	val any
	raw string
}

// parser reads the subset of Python literal syntax that NumPy headers use.
type parser struct {
	s   string
	pos int
}

func (p *parser) rest() string {
	const n = 20
	if len(p.s)-p.pos > n {
		return p.s[p.pos:p.pos+n] + "..."
	}
	return p.s[p.pos:]
}

func (p *parser) space() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

// eat skips spaces and then c, reporting whether c was there.
func (p *parser) eat(c byte) bool {
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *parser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("too deeply nested")
	}
	p.space()
	if p.pos >= len(p.s) {
		return nil, errors.New("unexpected end")
	}
	switch c := p.s[p.pos]; {
	case c == '\'' || c == '"':
		return p.str()
	case c == '{':
		return p.dict(depth)
	case c == '(' || c == '[':
		return p.seq(depth)
	case c == '-' || c == '+' || '0' <= c && c <= '9':
		return p.int()
	case 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z':
		start := p.pos
		for p.pos < len(p.s) && isIdent(p.s[p.pos]) {
			p.pos++
		}
		switch id := p.s[start:p.pos]; id {
		case "True":
			return true, nil
		case "False":
			return false, nil
		case "None":
			return nil, nil
		default:
			return nil, fmt.Errorf("unexpected name %q", id)
		}
	}
	return nil, fmt.Errorf("unexpected %q", p.rest())
}

func isIdent(c byte) bool {
	return c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}

func (p *parser) str() (string, error) {
	q := p.s[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		switch {
		case c == q:
			return b.String(), nil
		case c == '\\' && p.pos < len(p.s):
			b.WriteByte(p.s[p.pos])
			p.pos++
		case c == '\n':
			return "", errors.New("newline in string")
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("unterminated string")
}

func (p *parser) int() (int64, error) {
	start := p.pos
	if c := p.s[p.pos]; c == '-' || c == '+' {
		p.pos++
	}
	for p.pos < len(p.s) && '0' <= p.s[p.pos] && p.s[p.pos] <= '9' {
		p.pos++
	}
	n, err := strconv.ParseInt(p.s[start:p.pos], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad integer %q", p.s[start:p.pos])
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'L' || p.s[p.pos] == 'l') {
		p.pos++ // Python 2 long, as in files written by old NumPy
	}
	return n, nil
}

// seq parses a tuple or list; a one-element tuple needs its trailing comma.
func (p *parser) seq(depth int) (any, error) {
	open := p.s[p.pos]
	p.pos++
	closer := byte(')')
	if open == '[' {
		closer = ']'
	}
	var elems []any
	comma := false
	for !p.eat(closer) {
		if len(elems) > 0 && !comma {
			return nil, fmt.Errorf("want ',' or '%c' at %q", closer, p.rest())
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		elems = append(elems, v)
		comma = p.eat(',')
	}
	if open == '[' {
		return pyList(elems), nil
	}
	if len(elems) == 1 && !comma {
		return elems[0], nil // a parenthesised expression
	}
	return pyTuple(elems), nil
}

func (p *parser) dict(depth int) (pyDict, error) {
	p.pos++ // '{'
	var d pyDict
	comma := false
	for !p.eat('}') {
		if len(d) > 0 && !comma {
			return nil, fmt.Errorf("want ',' or '}' at %q", p.rest())
		}
		k, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, errors.New("dictionary key is not a string")
		}
		if !p.eat(':') {
			return nil, fmt.Errorf("want ':' at %q", p.rest())
		}
		p.space()
		start := p.pos
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		d = append(d, pyItem{key: key, val: v, raw: p.s[start:p.pos]})
		comma = p.eat(',')
	}
	return d, nil
}

// formatHeader returns the complete header of a C-order array, magic string
// included, exactly as numpy.save writes it: format 1.0 unless the header
// is too long for it, the data aligned to 64 bytes.
func formatHeader(descr string, shape []int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr)
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	if len(shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteString("), }")
	if len(shape) > 0 {
		b.WriteString(strings.Repeat(" ", max(0, growthDigits-len(strconv.Itoa(shape[0])))))
	}
	dict := b.String()

	major, lenSize := 1, 2
	hlen := len(dict) + 1 // the dictionary and its newline
	pad := align - (len(magic)+2+lenSize+hlen)%align
	if hlen+pad > math.MaxUint16 {
		major, lenSize = 2, 4
		pad = align - (len(magic)+2+lenSize+hlen)%align
	}
	pre := len(magic) + 2 + lenSize
	out := make([]byte, 0, pre+hlen+pad)
	out = append(out, magic...)
	out = append(out, byte(major), 0)
	if major == 1 {
		out = binary.LittleEndian.AppendUint16(out, uint16(hlen+pad))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(hlen+pad))
	}
	out = append(out, dict...)
	for range pad {
		out = append(out, ' ')
	}
	return append(out, '\n')
}
