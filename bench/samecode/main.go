// Command samecode checks that a change leaves the compiler's output alone: it
// builds tec at a base revision and from the working tree, runs both over
// every example (each model of a file with several), optimisation level,
// precision and size (the tiny configuration and the full one), emitting
// MODEL.cu, MODEL.h, MODEL.ll, main.cu and the --report JSON, and compares the
// two trees byte for byte. A structural change must report no difference.
//
// Usage:
//
//	go run ./bench/samecode [-base REV] [-keep DIR] [-levels 0,1,2,3,4] [-precisions f32,tf32,bf16,f16] [-sizes tiny,full] [-targets sm_80,sm_90] [-j N]
//
// It prints one line per differing file and exits with status 1 if there is
// any. The output of a failing build (its standard error and exit status) is
// compared as well, so a build that starts or stops failing is a difference.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"tec/examples"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("samecode: ")
	base := flag.String("base", "HEAD", "the revision to compare the working tree with")
	levels := flag.String("levels", "0,1,2,3,4", "optimisation levels, comma-separated")
	precisions := flag.String("precisions", "f32,tf32,bf16,f16", "precisions, comma-separated")
	sizes := flag.String("sizes", "tiny,full", "sizes: tiny (each example's tiny configuration), full, or both")
	targets := flag.String("targets", "sm_80,sm_90", "GPU architectures (--target), comma-separated")
	jobs := flag.Int("j", runtime.NumCPU(), "builds to run at once")
	keep := flag.String("keep", "", "keep the base revision's output under this directory (base-COMMIT/), for later runs with the same -keep to reuse")
	flag.Parse()

	dir := *keep
	if dir == "" {
		d, err := os.MkdirTemp("", "samecode")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	work, err := os.MkdirTemp(dir, "work")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	workTec := filepath.Join(work, "tec")
	if err := run(".", "go", "build", "-o", workTec, "./cmd/tec"); err != nil {
		log.Fatal(err)
	}
	builds := plan(split(*levels), split(*precisions), split(*sizes), split(*targets))
	log.Printf("%d builds at %s and in the working tree", len(builds), *base)
	baseTree, err := emitBase(*base, dir, builds, *jobs)
	if err != nil {
		log.Fatal(err)
	}
	workTree := filepath.Join(work, "out")
	emitAll(workTec, workTree, builds, *jobs)
	diffs, err := compare(baseTree, workTree, builds)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range diffs {
		fmt.Println(d)
	}
	if len(diffs) > 0 {
		log.Fatalf("%d files differ", len(diffs))
	}
	log.Printf("no difference in %d builds", len(builds))
}

// A build is one tec build: the directory its output goes to, relative to
// the tree, and its arguments.
type build struct {
	dir  string
	args []string
}

// plan lists the builds: every example at every combination asked for.
func plan(levels, precisions, sizes, targets []string) []build {
	var out []build
	for _, ex := range examples.All() {
		for _, size := range sizes {
			for _, target := range targets {
				for _, o := range levels {
					for _, p := range precisions {
						args := []string{"-O", o, "--precision", p, "--target", target}
						if size == "tiny" {
							args = append(args, ex.TinyFlags()...)
						} else if ex.Model != "" {
							args = append(args, "--model", ex.Model)
						}
						args = append(args, filepath.Join("examples", ex.File()))
						name := strings.ReplaceAll(ex.Name, "/", "-")
						out = append(out, build{filepath.Join(name, size, target, "O"+o+"-"+p), args})
					}
				}
			}
		}
	}
	return out
}

// emitBase fills dir/base-COMMIT with the base revision's output for the
// builds it does not hold yet, and returns that directory. Runs with the same
// -keep directory share it, so the base revision's output is made once.
func emitBase(rev, dir string, builds []build, jobs int) (string, error) {
	commit, err := exec.Command("git", "rev-parse", rev).Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse %s: %w", rev, err)
	}
	tree := filepath.Join(dir, "base-"+strings.TrimSpace(string(commit)))
	var missing []build
	for _, b := range builds {
		if _, err := os.Stat(filepath.Join(tree, b.dir, "stderr")); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		log.Printf("reusing %s", tree)
		return tree, nil
	}
	tec, err := buildAt(rev, dir)
	if err != nil {
		return "", err
	}
	emitAll(tec, tree, missing, jobs)
	return tree, nil
}

// buildAt builds cmd/tec at rev in a temporary worktree under dir.
func buildAt(rev, dir string) (string, error) {
	tmp, err := os.MkdirTemp(dir, "tec-base")
	if err != nil {
		return "", err
	}
	wt := filepath.Join(tmp, "worktree")
	if err := run(".", "git", "worktree", "add", "--detach", wt, rev); err != nil {
		return "", err
	}
	defer run(".", "git", "worktree", "remove", "--force", wt)
	bin := filepath.Join(tmp, "tec")
	if err := run(wt, "go", "build", "-o", bin, "./cmd/tec"); err != nil {
		return "", err
	}
	return bin, nil
}

// emitAll runs the builds with tec, jobs at a time, into tree.
func emitAll(tec, tree string, builds []build, jobs int) {
	work := make(chan build)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				emit(tec, tree, b)
			}
		}()
	}
	for _, b := range builds {
		work <- b
	}
	close(work)
	wg.Wait()
}

// emit runs one build, keeping its standard error and, if it failed, its
// exit status beside what it wrote.
func emit(tec, tree string, b build) {
	out := filepath.Join(tree, b.dir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		log.Fatal(err)
	}
	args := append([]string{"build", "--emit", "cu,ll,host", "--color", "never",
		"--report", filepath.Join(out, "report.json"), "-o", out}, b.args...)
	cmd := exec.CommandContext(context.Background(), tec, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(&stderr, "\n%v\n", err)
	}
	if err := os.WriteFile(filepath.Join(out, "stderr"), stderr.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

// compare lists the files of the builds that differ between trees a and b,
// or are in one only.
func compare(a, b string, builds []build) ([]string, error) {
	fa, fb := map[string][]byte{}, map[string][]byte{}
	for _, bd := range builds {
		if err := files(filepath.Join(a, bd.dir), bd.dir, fa); err != nil {
			return nil, err
		}
		if err := files(filepath.Join(b, bd.dir), bd.dir, fb); err != nil {
			return nil, err
		}
	}
	var diffs []string
	for name, ca := range fa {
		cb, ok := fb[name]
		switch {
		case !ok:
			diffs = append(diffs, "only in base: "+name)
		case !bytes.Equal(ca, cb):
			diffs = append(diffs, "differs: "+name)
		}
	}
	for name := range fb {
		if _, ok := fa[name]; !ok {
			diffs = append(diffs, "only in work: "+name)
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}

// files reads every file under root into m, by path relative to root
// prefixed with prefix.
func files(root, prefix string, m map[string][]byte) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		m[filepath.Join(prefix, rel)] = b
		return nil
	})
}

func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func split(s string) []string { return strings.Split(s, ",") }
