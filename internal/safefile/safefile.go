// Package safefile reads and writes the files a user names so that they
// cannot cost more than they should.
//
// ReadFile reads at most a given number of bytes, so that a path such as
// /dev/zero, or a huge file given by mistake, is an error instead of
// exhausting memory.
//
// Writes never cost the user what was at the path before, nor the path
// itself. The rule: a path the user gave is never removed. Where it names a regular
// file, or nothing, the data goes to a temporary file in the same directory,
// which is renamed over the path once every byte is written and synced; on
// any error the temporary file is removed and the path is as it was. A
// symbolic link is followed, so the file it points to is replaced and the
// link stays a link. Where the path names something else (a device such as
// /dev/null, a named pipe), or anything under /dev or /proc (/dev/stdout
// redirected to a file by a shell), the data is appended to it directly
// (after what the shell or the process wrote there before): there is
// nothing to rename over, and nothing is removed when the write fails.
//
// A regular file that is read-only (no write permission for anyone, or
// none for this process) is not replaced: the write is an error wrapping
// ErrReadOnly, as cp refuses to overwrite it. The directories missing on
// the way to a new file are created.
package safefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TooLargeError reports a file longer than ReadFile's limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: the file is larger than %s, the most it may be", e.Path, formatBytes(e.Limit))
}

// formatBytes formats n in the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// ErrReadOnly is wrapped by the error of a write to a read-only file. It
// wraps fs.ErrPermission.
var ErrReadOnly = fmt.Errorf("the file is read-only: %w", fs.ErrPermission)

// ReadFile reads the file at path, as os.ReadFile does, but reads no more
// than limit+1 bytes: a longer file is a *TooLargeError.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}

// Write creates or replaces the file at path with what write writes to w.
// A new file gets permission perm (less the umask); a replaced one keeps
// its permission. See the package documentation for what happens on error;
// the error is write's, or the file system's, for the caller to wrap.
func Write(path string, perm fs.FileMode, write func(w io.Writer) error) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && (!st.Mode().IsRegular() || underDevOrProc(path)):
		// A device, possibly behind links that only the kernel can follow
		// (/dev/stdout is /proc/self/fd/1, a link to "pipe:[...]").
		return writeDirect(path, perm, write)
	case err == nil:
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return err
		}
		if err := checkWritable(target, st.Mode()); err != nil {
			return err
		}
		return writeReplace(target, st.Mode().Perm(), write)
	case errors.Is(err, fs.ErrNotExist):
		target, err := resolve(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o777); err != nil {
			return err
		}
		return writeReplace(target, perm, write)
	}
	return err
}

// checkWritable returns an error wrapping ErrReadOnly if the regular file
// at path, of mode mode, may not be written: no write permission for
// anyone (which the superuser, whom the kernel lets open it, respects
// too), or none for this process. Opening it for writing, without
// truncating, changes neither its data nor its times.
func checkWritable(path string, mode fs.FileMode) error {
	readOnly := mode.Perm()&0o222 == 0
	if !readOnly {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		readOnly = errors.Is(err, fs.ErrPermission)
	}
	if readOnly {
		return &fs.PathError{Op: "write", Path: path, Err: ErrReadOnly}
	}
	return nil
}

// WriteFile is Write of the bytes data.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// underDevOrProc reports whether path names a file under /dev or /proc,
// such as /dev/stdout: those stand for a file descriptor that another
// process opened (a shell's redirection), which must be written through
// even when it is a regular file.
func underDevOrProc(path string) bool {
	abs, err := filepath.Abs(path)
	return err == nil && (strings.HasPrefix(abs, "/dev/") || strings.HasPrefix(abs, "/proc/"))
}

// resolve follows the symbolic links of a path that names nothing yet, so
// that the file is created where a dangling link points.
func resolve(path string) (string, error) {
	for range 40 { // as many links as Linux follows
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// writeDirect writes to a path that is not a regular file, such as a device.
func writeDirect(path string, perm fs.FileMode, write func(w io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, perm) // after what a shell or this process wrote to it
	if err != nil {
		return err
	}
	err = writeBuffered(f, write)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeReplace writes a temporary file beside path and renames it over path.
func writeReplace(path string, perm fs.FileMode, write func(w io.Writer) error) error {
	f, err := createTemp(path, perm)
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = writeBuffered(f, write)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// createTemp creates a new file named after path in path's directory, with
// permission perm less the umask (os.CreateTemp would give 0600).
func createTemp(path string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	for {
		name := filepath.Join(dir, "."+base+".tmp"+strconv.FormatUint(rand.Uint64()%1e9, 10))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
}

func writeBuffered(f *os.File, write func(w io.Writer) error) error {
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		return err
	}
	return bw.Flush()
}
