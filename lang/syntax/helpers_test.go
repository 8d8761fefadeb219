package syntax_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tec/lang/syntax"
)

// testFiles returns the names of the .te files under testdata/dir.
func testFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.te"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in testdata/%s: %v", dir, err)
	}
	return files
}

var spanType = reflect.TypeFor[syntax.Span]()

// zeroSpans sets every Span in the tree under v to the zero Span.
func zeroSpans(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			zeroSpans(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			zeroSpans(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == spanType {
			if v.CanSet() {
				v.SetZero()
			}
			return
		}
		for i := range v.NumField() {
			zeroSpans(v.Field(i))
		}
	}
}

// sameMeaning reports, as a non-empty string, how a and b differ when spans
// are ignored: their declarations must be equal, and their comments must have
// the same texts in the same order.
func sameMeaning(a, b *syntax.File) string {
	zeroSpans(reflect.ValueOf(a))
	zeroSpans(reflect.ValueOf(b))
	if !reflect.DeepEqual(a.Decls, b.Decls) {
		return fmt.Sprintf("declarations differ:\n%s\nvs\n%s", dump(a.Decls), dump(b.Decls))
	}
	if !reflect.DeepEqual(a.Comments, b.Comments) {
		return fmt.Sprintf("comments differ: %q vs %q", a.Comments, b.Comments)
	}
	return ""
}

func dump(v any) string {
	s := fmt.Sprintf("%#v", v)
	return strings.ReplaceAll(s, "syntax.", "")
}

// checkFormat formats src, which must parse, and checks that the result is
// idempotent and means the same as src. It returns the formatted text.
func checkFormat(t testing.TB, name string, src []byte) []byte {
	t.Helper()
	f, err := syntax.Parse(name, src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	out, err := syntax.Format(f, src)
	if err != nil {
		t.Fatalf("format: %v", err)
	}
	g, err := syntax.Parse(name, out)
	if err != nil {
		t.Fatalf("the formatted text does not parse: %v\n%s", err, out)
	}
	again, err := syntax.Format(g, out)
	if err != nil {
		t.Fatalf("format again: %v", err)
	}
	if !bytes.Equal(out, again) {
		t.Fatalf("format is not idempotent:\n--- once ---\n%s\n--- twice ---\n%s", out, again)
	}
	if diff := sameMeaning(f, g); diff != "" {
		t.Fatalf("formatting changed the meaning: %s\n--- formatted ---\n%s", diff, out)
	}
	return out
}
