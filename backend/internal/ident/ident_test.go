package ident

import "testing"

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"y", "y"},
		{"y.1", "y_1"},
		{"layer[3].w", "layer_3_w"},
		{"a/p/mx", "a_p_mx"},
		{"h/linear.1", "h_linear_1"},
		{"a..b", "a_b"},
		{"3x", "_3x"},
		{"", "v"},
		{"...", "v"},
		{"__x", "_x"},
		{"_X", "v_X"},
		{"_x", "_x"},
		{"ω", "v"},
	} {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestScope(t *testing.T) {
	s := NewScope("int")
	for _, tc := range []struct{ in, want string }{
		{"int", "int_1"},
		{"y.1", "y_1"},
		{"y_1", "y_1_1"},
		{"y.1", "y_1_2"},
		{"x", "x"},
		{"f/gelu", "f_gelu"},
		{"f_gelu", "f_gelu_1"},
	} {
		if got := s.Name(tc.in); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	c := s.Child()
	if got := c.Name("x"); got != "x_1" {
		t.Errorf("child Name(x) = %q, want x_1", got)
	}
	if s.Taken("x_1") {
		t.Error("a child's name leaked into its parent")
	}
}

// TestChildSnapshot checks that a child sees its parent's names as they
// were when it was made, numbering on from where the parent left off, and
// that names taken later on either side stay there.
func TestChildSnapshot(t *testing.T) {
	s := NewScope()
	s.Name("a")
	s.Name("a") // a_1; the parent numbers a from 2 next
	c := s.Child()
	if got := s.Name("b"); got != "b" {
		t.Errorf("parent Name(b) = %q, want b", got)
	}
	if c.Taken("b") {
		t.Error("a name the parent took after Child is taken in the child")
	}
	if got := c.Name("a"); got != "a_2" {
		t.Errorf("child Name(a) = %q, want a_2", got)
	}
	if got := s.Name("a"); got != "a_2" {
		t.Errorf("parent Name(a) after the child's = %q, want a_2", got)
	}
	g := c.Child()
	c.Reserve("z")
	for _, tc := range []struct {
		name string
		want bool
	}{{"a", true}, {"a_1", true}, {"a_2", true}, {"b", false}, {"z", false}} {
		if got := g.Taken(tc.name); got != tc.want {
			t.Errorf("grandchild Taken(%s) = %t, want %t", tc.name, got, tc.want)
		}
	}
	if got := g.Name("a"); got != "a_3" {
		t.Errorf("grandchild Name(a) = %q, want a_3", got)
	}
}
