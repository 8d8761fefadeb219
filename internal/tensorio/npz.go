package tensorio

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"tec/te"
)

// ReadNPZ reads the .npz archive at path, as written by numpy.savez or
// numpy.savez_compressed, and returns its arrays by name. Names are the
// archive's entry names without their ".npy" suffix.
func ReadNPZ(path string) (map[string]*te.Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, wrap("", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, wrap("", err)
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return nil, wrap(path, err)
	}
	arrays := make(map[string]*te.Array, len(zr.File))
	for _, zf := range zr.File {
		if strings.HasSuffix(zf.Name, "/") {
			continue // a directory
		}
		name := strings.TrimSuffix(zf.Name, ".npy")
		if _, dup := arrays[name]; dup {
			return nil, wrap(path, fmt.Errorf("duplicate array %q", name))
		}
		a, err := readEntry(zf)
		if err != nil {
			return nil, wrap(path+": "+zf.Name, err)
		}
		arrays[name] = a
	}
	return arrays, nil
}

func readEntry(zf *zip.File) (*te.Array, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readNPY(bufio.NewReaderSize(rc, chunk))
}

// WriteNPZ writes arrays to the file at path as an uncompressed .npz archive,
// creating or truncating it; on error, it removes the file. Entries are named
// name+".npy" and come in sorted order, so the output is deterministic.
func WriteNPZ(path string, arrays map[string]*te.Array) error {
	f, err := os.Create(path)
	if err != nil {
		return wrap("", err)
	}
	bw := bufio.NewWriterSize(f, chunk)
	err = writeNPZ(bw, path, arrays)
	if err == nil {
		err = bw.Flush()
		if err != nil {
			err = wrap(path, err)
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = wrap(path, cerr)
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

func writeNPZ(bw *bufio.Writer, path string, arrays map[string]*te.Array) error {
	names := make([]string, 0, len(arrays))
	for name := range arrays {
		if name == "" {
			return wrap(path, errors.New("empty array name"))
		}
		names = append(names, name)
	}
	slices.Sort(names)
	// Every entry gets the earliest time a zip file can hold, so that the
	// output depends on the arrays alone.
	epoch := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	zw := zip.NewWriter(bw)
	for _, name := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{
			Name:     name + ".npy",
			Method:   zip.Store,
			Modified: epoch,
		})
		if err != nil {
			return wrap(path+": "+name, err)
		}
		if err := writeNPY(w, arrays[name]); err != nil {
			return wrap(path+": "+name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return wrap(path, err)
	}
	return nil
}
