package tensorio

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
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

// readEntry reads the array of one archive entry. The entry must hold
// exactly one .npy array, and its bytes must match the CRC-32 the archive's
// central directory records for it, as NumPy (Python's zipfile) requires:
// archive/zip checks a CRC only once an entry is read to its end, and then
// not where the recorded CRC is 0, so readEntry computes its own.
func readEntry(zf *zip.File, want *Spec) (*te.Array, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	sum := crc32.NewIEEE()
	br := bufio.NewReaderSize(io.TeeReader(rc, sum), chunk)
	cr := &countingReader{r: br}
	a, err := readNPY(cr, want)
	if err != nil {
		return nil, err
	}
	// Whatever of the entry bufio has not read yet is read here, up to its
	// end or to the first byte the array does not account for. At the end,
	// archive/zip reports its own CRC check (zip.ErrChecksum) where it made
	// one; the message below says more.
	if _, err := br.ReadByte(); err == nil {
		return nil, fmt.Errorf("%d bytes follow the array's data (the entry holds %d bytes; the header and data %d)",
			int64(zf.UncompressedSize64)-cr.n, zf.UncompressedSize64, cr.n)
	} else if err != io.EOF && !errors.Is(err, zip.ErrChecksum) {
		return nil, err
	}
	if got := sum.Sum32(); got != zf.CRC32 {
		return nil, fmt.Errorf("bad CRC-32: the entry's bytes have 0x%08x, the archive records 0x%08x (the file is corrupt)", got, zf.CRC32)
	}
	return a, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
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
