package lang_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tec/internal/safefile"
	"tec/lang"
	"tec/lang/diag"
)

// TestImportNotRegular is the language server's wedge of issue 23 as
// `tec check` meets it: an import of something other than a regular file
// (a named pipe nobody writes to, a directory, a device, /dev/stdin) is an
// error at the import, at once, whether Check reads imports itself or
// through a Config.ReadFile that would block on a pipe (the CLI's).
func TestImportNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.te")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	sub := filepath.Join(dir, "sub.te")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.te")
	if err := os.WriteFile(good, []byte("const N = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cliRead := func(path string) ([]byte, error) { return safefile.ReadFile(path, lang.MaxSourceBytes) }
	tests := []struct {
		name, path string
		want       string // in the message; "" for no error
	}{
		{"named pipe", fifo, "it is a named pipe, not a regular file"},
		{"directory", sub, "it is a directory, not a regular file"},
		{"device", "/dev/null", "it is a character device"},
		{"stdin", "/proc/self/fd/0", "not a regular file"},
		{"regular file", good, ""},
	}
	for _, tt := range tests {
		for _, reader := range []struct {
			name string
			read func(string) ([]byte, error)
		}{{"own reader", nil}, {"CLI reader", cliRead}} {
			t.Run(tt.name+"/"+reader.name, func(t *testing.T) {
				if tt.name == "stdin" {
					if st, err := os.Stat(tt.path); err != nil || st.Mode().IsRegular() {
						t.Skip("standard input is a regular file here")
					}
				}
				src := "import \"" + tt.path + "\"\nmodel m { input x: f32[4]\n output y = x * 2.0 }\n"
				done := make(chan diag.List, 1)
				go func() {
					_, ds := lang.Check(filepath.Join(dir, "main.te"), []byte(src), lang.Config{ReadFile: reader.read})
					done <- ds
				}()
				var ds diag.List
				select {
				case ds = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("Check is still reading the import after 10 s")
				}
				if tt.want == "" {
					if ds.HasErrors() {
						t.Fatalf("unexpected errors: %v", ds.Error())
					}
					return
				}
				if len(ds) != 1 || ds[0].Code != "import" || !strings.Contains(ds[0].Message, tt.want) {
					t.Fatalf("got %v, want one import error containing %q", ds.Error(), tt.want)
				}
			})
		}
	}
}

// TestReadSource checks the reader behind imports and the language
// server's reads of files not open in the editor: a regular file up to the
// limit, and at once an error for a longer one and for what is not a
// regular file.
func TestReadSource(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	small := filepath.Join(dir, "small.te")
	if err := os.WriteFile(small, []byte("const N = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var notRegular *lang.NotRegularError
	var tooLarge *safefile.TooLargeError
	tests := []struct {
		name  string
		path  string
		limit int64
		check func(data []byte, err error) bool
	}{
		{"regular", small, 100, func(b []byte, err error) bool { return err == nil && string(b) == "const N = 4\n" }},
		{"at the limit", small, 12, func(b []byte, err error) bool { return err == nil && len(b) == 12 }},
		{"over the limit", small, 11, func(b []byte, err error) bool { return errors.As(err, &tooLarge) }},
		{"named pipe", fifo, 100, func(b []byte, err error) bool { return errors.As(err, &notRegular) }},
		{"directory", dir, 100, func(b []byte, err error) bool { return errors.As(err, &notRegular) }},
		{"device", "/dev/zero", 100, func(b []byte, err error) bool { return errors.As(err, &notRegular) }},
		{"missing", filepath.Join(dir, "none.te"), 100, func(b []byte, err error) bool { return errors.Is(err, os.ErrNotExist) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type result struct {
				data []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				b, err := lang.ReadSource(tt.path, tt.limit)
				done <- result{b, err}
			}()
			select {
			case r := <-done:
				if !tt.check(r.data, r.err) {
					t.Errorf("ReadSource(%s) = %q, %v", tt.path, r.data, r.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ReadSource is still reading after 10 s")
			}
		})
	}
}
