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
