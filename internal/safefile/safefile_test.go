package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var errWrite = errors.New("planted write error")

// entries returns the names in dir, to see that no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name string
		// setup makes the directory's contents and returns the path to
		// write and the file whose content to check afterwards.
		setup    func(t *testing.T, dir string) (path, file string)
		fail     bool   // the write function returns an error
		want     string // the content of file afterwards
		wantErr  bool
		wantLink bool // path is still a symbolic link
	}{
		{"new", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "out")
			return p, p
		}, false, "new", false, false},
		{"replace", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "out")
			must(t, os.WriteFile(p, []byte("old"), 0o640))
			return p, p
		}, false, "new", false, false},
		{"failed write keeps the old file", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "out")
			must(t, os.WriteFile(p, []byte("old"), 0o640))
			return p, p
		}, true, "old", true, false},
		{"through a link", func(t *testing.T, dir string) (string, string) {
			target := filepath.Join(dir, "target")
			must(t, os.WriteFile(target, []byte("old"), 0o640))
			link := filepath.Join(dir, "link")
			must(t, os.Symlink("target", link))
			return link, target
		}, false, "new", false, true},
		{"failed write through a link", func(t *testing.T, dir string) (string, string) {
			target := filepath.Join(dir, "target")
			must(t, os.WriteFile(target, []byte("old"), 0o640))
			link := filepath.Join(dir, "link")
			must(t, os.Symlink(target, link))
			return link, target
		}, true, "old", true, true},
		{"dangling link", func(t *testing.T, dir string) (string, string) {
			link := filepath.Join(dir, "link")
			must(t, os.Symlink("target", link))
			return link, filepath.Join(dir, "target")
		}, false, "new", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, file := tt.setup(t, dir)
			var mode os.FileMode
			if st, err := os.Stat(file); err == nil {
				mode = st.Mode()
			}
			err := Write(path, 0o644, func(w io.Writer) error {
				io.WriteString(w, "new")
				if tt.fail {
					return errWrite
				}
				return nil
			})
			if tt.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			got, rerr := os.ReadFile(file)
			if rerr != nil || string(got) != tt.want {
				t.Errorf("%s holds %q (%v), want %q", file, got, rerr, tt.want)
			}
			if fi, err := os.Lstat(path); err != nil || (fi.Mode()&os.ModeSymlink != 0) != tt.wantLink {
				t.Errorf("%s: %v, %v; want a link: %v", path, fi, err, tt.wantLink)
			}
			if st, err := os.Stat(file); err == nil && mode != 0 && st.Mode() != mode {
				t.Errorf("mode %v, want %v kept", st.Mode(), mode)
			}
			for _, name := range entries(t, dir) {
				if filepath.Ext(name) != "" || name[0] == '.' {
					t.Errorf("temporary file %s left behind", name)
				}
			}
		})
	}
}

// TestWriteDevice is R5: a failed write to a link to /dev/full (a device:
// written through, no temporary file) is an error, and the link stays;
// /dev/null is written through.
func TestWriteDevice(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "out.npz")
	must(t, os.Symlink("/dev/full", link))
	err := WriteFile(link, make([]byte, 100), 0o644)
	if err == nil {
		t.Fatal("writing /dev/full succeeded")
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is gone: %v, %v", fi, err)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Errorf("/dev/full: %v", err)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("the directory holds %v, want the link alone", names)
	}
	if err := WriteFile("/dev/null", []byte("x"), 0o644); err != nil {
		t.Errorf("writing /dev/null: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadFile is R4: /dev/zero is an error after limit+1 bytes, not a read
// until memory runs out.
func TestReadFile(t *testing.T) {
	small := filepath.Join(t.TempDir(), "small")
	must(t, os.WriteFile(small, []byte("12345"), 0o644))
	tests := []struct {
		path  string
		limit int64
		want  string // the content, or the error
	}{
		{small, 5, "12345"},
		{small, 4, small + ": the file is larger than 4 bytes, the most it may be"},
		{"/dev/zero", 16 << 20, "/dev/zero: the file is larger than 16 MiB, the most it may be"},
	}
	for _, tt := range tests {
		data, err := ReadFile(tt.path, tt.limit)
		got := string(data)
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("ReadFile(%s, %d) = %q, want %q", tt.path, tt.limit, got, tt.want)
		}
	}
}

// TestWriteFileDescriptor: /proc/self/fd/N (what /dev/stdout is) naming a
// regular file that a shell opened to append is written through, not
// replaced: the file keeps its inode and what it held.
func TestWriteFileDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	must(t, os.WriteFile(path, []byte("old "), 0o644))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	defer f.Close()
	fd := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if _, err := os.Stat(fd); err != nil {
		t.Skip("no /proc/self/fd")
	}
	before, err := os.Stat(path)
	must(t, err)
	must(t, WriteFile(fd, []byte("new"), 0o644))
	after, err := os.Stat(path)
	must(t, err)
	if !os.SameFile(before, after) {
		t.Error("the file was replaced")
	}
	if got, _ := os.ReadFile(path); string(got) != "old new" {
		t.Errorf("the file holds %q, want %q", got, "old new")
	}
}

// TestWriteReadOnlyAndParents checks that a read-only file is neither
// replaced nor changed, as cp would refuse it (the rename used to replace
// it), also through a link, and that the directories missing on the way to
// a new file are created.
func TestWriteReadOnlyAndParents(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) (path, file string)
		want  string // the content of file afterwards
		err   error  // the error the write wraps
	}{
		{"read-only", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "out")
			must(t, os.WriteFile(p, []byte("old"), 0o444))
			return p, p
		}, "old", ErrReadOnly},
		{"read-only through a link", func(t *testing.T, dir string) (string, string) {
			target := filepath.Join(dir, "target")
			must(t, os.WriteFile(target, []byte("old"), 0o400))
			link := filepath.Join(dir, "link")
			must(t, os.Symlink("target", link))
			return link, target
		}, "old", ErrReadOnly},
		{"writable by its owner only", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "out")
			must(t, os.WriteFile(p, []byte("old"), 0o600))
			return p, p
		}, "new", nil},
		{"missing parents", func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "a", "b", "out")
			return p, p
		}, "new", nil},
		{"missing parents of a dangling link", func(t *testing.T, dir string) (string, string) {
			link := filepath.Join(dir, "link")
			must(t, os.Symlink(filepath.Join("c", "target"), link))
			return link, filepath.Join(dir, "c", "target")
		}, "new", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, file := tt.setup(t, dir)
			err := WriteFile(path, []byte("new"), 0o644)
			if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if tt.err != nil && !errors.Is(err, os.ErrPermission) {
				t.Errorf("err = %v does not wrap os.ErrPermission", err)
			}
			if got, err := os.ReadFile(file); err != nil || string(got) != tt.want {
				t.Errorf("%s holds %q (%v), want %q", file, got, err, tt.want)
			}
			for _, name := range entries(t, dir) {
				if name[0] == '.' {
					t.Errorf("temporary file %s left behind", name)
				}
			}
		})
	}
}
