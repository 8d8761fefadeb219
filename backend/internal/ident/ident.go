// Package ident turns the names of a kernel-IR module (tensor names such as
// "y.1", "a/p/mx" or "layer[3].w") into identifiers that C, CUDA C++ and LLVM IR
// accept, keeping them readable and unique within a scope.
package ident

import (
	"maps"
	"strconv"
	"strings"
)

// Sanitize returns name with every character that may not appear in a C
// identifier replaced by '_', runs of '_' squeezed, trailing '_' dropped and
// a leading digit prefixed with '_'. It never returns "".
func Sanitize(name string) string {
	var b strings.Builder
	last := byte(0)
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !ok {
			c = '_'
		}
		if c == '_' && last == '_' {
			continue
		}
		b.WriteByte(c)
		last = c
	}
	s := strings.TrimRight(b.String(), "_")
	switch {
	case s == "":
		return "v"
	case '0' <= s[0] && s[0] <= '9':
		return "_" + s
	case strings.HasPrefix(s, "__") || len(s) > 1 && s[0] == '_' && 'A' <= s[1] && s[1] <= 'Z':
		// Reserved to the implementation in C and C++.
		return "v" + s
	}
	return s
}

// Scope hands out unique identifiers. The zero Scope is not usable; call
// NewScope.
type Scope struct {
	own names
	// outer are the names of the enclosing scopes when s was made by
	// Child, innermost last; their owners copy them before changing them,
	// so that s sees them as they were.
	outer []names
	// shared is whether a child reads own, which must then be copied
	// before it changes.
	shared bool
}

// names are the names one scope took and the suffix to try next for each
// base name it numbered.
type names struct {
	used map[string]bool
	next map[string]int
}

// NewScope returns a scope in which the reserved names are taken.
func NewScope(reserved ...string) *Scope {
	s := &Scope{own: names{used: make(map[string]bool, len(reserved)), next: map[string]int{}}}
	for _, r := range reserved {
		s.own.used[r] = true
	}
	return s
}

// write makes s's own names its alone before a change.
func (s *Scope) write() {
	if s.shared {
		s.own = names{used: maps.Clone(s.own.used), next: maps.Clone(s.own.next)}
		s.shared = false
	}
}

// Reserve marks names as taken.
func (s *Scope) Reserve(names ...string) {
	s.write()
	for _, n := range names {
		s.own.used[n] = true
	}
}

// Taken reports whether name is taken.
func (s *Scope) Taken(name string) bool {
	if s.own.used[name] {
		return true
	}
	for _, o := range s.outer {
		if o.used[name] {
			return true
		}
	}
	return false
}

// nextSuffix returns the suffix to try next for base, as the innermost
// scope that numbered base left it.
func (s *Scope) nextSuffix(base string) int {
	if i, ok := s.own.next[base]; ok {
		return i
	}
	for j := len(s.outer) - 1; j >= 0; j-- {
		if i, ok := s.outer[j].next[base]; ok {
			return i
		}
	}
	return 0
}

// Name returns Sanitize(name), or, if that is taken, the first of
// Sanitize(name)+"_1", "_2", ... that is not, and marks it taken.
func (s *Scope) Name(name string) string {
	s.write()
	base := Sanitize(name)
	n := base
	if s.Taken(n) {
		i := max(s.nextSuffix(base), 1)
		for n = base + "_" + strconv.Itoa(i); s.Taken(n); n = base + "_" + strconv.Itoa(i) {
			i++
		}
		s.own.next[base] = i + 1
	}
	s.own.used[n] = true
	return n
}

// Child returns a new scope in which every name taken in s is taken too.
// Names s takes later are not taken in the child. The child reads s's
// names rather than copying them, so that making one costs no more than
// the names the child itself takes; s copies them before it changes them.
func (s *Scope) Child() *Scope {
	s.shared = true
	outer := make([]names, 0, len(s.outer)+1)
	outer = append(append(outer, s.outer...), s.own)
	return &Scope{own: names{used: map[string]bool{}, next: map[string]int{}}, outer: outer}
}

// CKeywords returns the keywords of C and CUDA C++ and the names the CUDA
// runtime and its headers define that an identifier of emitted code must not
// shadow.
func CKeywords() []string {
	return []string{
		"alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char",
		"class", "const", "constexpr", "const_cast", "continue", "decltype", "default", "delete",
		"do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
		"float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace",
		"new", "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public",
		"register", "reinterpret_cast", "restrict", "return", "short", "signed", "sizeof",
		"static", "static_assert", "static_cast", "struct", "switch", "template", "this",
		"thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union",
		"unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor",
		"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "cg", "grid", "main",
		"min", "max", "abs", "exp", "log", "sqrt", "pow", "tanh", "erf", "floor",
		"half", "size_t", "dim3", "std", "int64_t", "NULL", "INFINITY", "NAN",
	}
}
