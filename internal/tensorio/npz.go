package tensorio

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"tec/internal/safefile"
	"tec/te"
)

// ReadNPZ reads the .npz archive at path, as written by numpy.savez or
// numpy.savez_compressed, and returns its arrays by name. Names are the
// archive's entry names without their ".npy" suffix. Each array may have at
// most te.MaxElements elements; use ReadNPZAs where the caller knows what to
// expect.
func ReadNPZ(path string) (map[string]*te.Array, error) {
	arrays, _, err := readNPZ(path, nil)
	return arrays, err
}

// ReadNPZAs reads the entries of the .npz archive at path that want names,
// checking each one's header against its Spec before decompressing any of
// its data. It returns the arrays by name, and the names of the other
// entries, which it does not read, sorted. A name of want that the archive
// lacks is no error: the caller decides what is missing.
func ReadNPZAs(path string, want map[string]Spec) (arrays map[string]*te.Array, others []string, err error) {
	if want == nil {
		want = map[string]Spec{}
	}
	return readNPZ(path, want)
}

// readNPZ reads the archive's entries; with a nil want it reads them all,
// otherwise only those want names.
func readNPZ(path string, want map[string]Spec) (map[string]*te.Array, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, wrap("", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, wrap("", err)
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return nil, nil, wrap(path, err)
	}
	arrays := map[string]*te.Array{}
	seen := map[string]bool{}
	var others []string
	for _, zf := range zr.File {
		if strings.HasSuffix(zf.Name, "/") {
			continue // a directory
		}
		name := strings.TrimSuffix(zf.Name, ".npy")
		if seen[name] {
			return nil, nil, wrap(path, fmt.Errorf("duplicate array %q", name))
		}
		seen[name] = true
		var spec *Spec
		if want != nil {
			s, ok := want[name]
			if !ok {
				others = append(others, name)
				continue
			}
			spec = &s
		}
		a, err := readEntry(zf, spec)
		if err != nil {
			return nil, nil, wrap(path+": "+zf.Name, err)
		}
		arrays[name] = a
	}
	slices.Sort(others)
	return arrays, others, nil
}

func readEntry(zf *zip.File, want *Spec) (*te.Array, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readNPY(bufio.NewReaderSize(rc, chunk), want)
}

// WriteNPZ writes arrays to the file at path as an uncompressed .npz
// archive, creating or replacing it as package safefile does: on error,
// whatever was at path is left as it was, and path is never removed.
// Entries are named name+".npy" and come in sorted order, so the output is
// deterministic.
func WriteNPZ(path string, arrays map[string]*te.Array) error {
	if err := safefile.Write(path, 0o666, func(w io.Writer) error { return writeNPZ(w, arrays) }); err != nil {
		return wrap(path, err)
	}
	return nil
}

func writeNPZ(bw io.Writer, arrays map[string]*te.Array) error {
	names := make([]string, 0, len(arrays))
	for name := range arrays {
		if name == "" {
			return errors.New("empty array name")
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
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := writeNPY(w, arrays[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return zw.Close()
}
