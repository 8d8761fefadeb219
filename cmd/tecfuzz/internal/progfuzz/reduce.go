package progfuzz

import (
	"bytes"
	"slices"
	"strconv"

	"tec/lang"
	"tec/lang/syntax"
)

// Reduce shrinks a failing program while it still fails in the class of
// target (same kind, configuration, message shape and known defect) and
// returns the smallest program found. It tries, over and over until none applies:
// deleting a declaration, a statement, an output or a where clause;
// replacing an expression by one of its operands or by 1.0; and making an
// int literal (a constant, a dimension, an offset) smaller. Each candidate
// is formatted, must pass lang.Check, and is kept only if Run still
// reports a failure of target's class at target's configuration.
// maxTries bounds the candidates tried (0: no bound).
func Reduce(src []byte, target Failure, maxTries int) []byte {
	class := target.Class()
	opts := Options{Fmt: target.Kind == KindFmt}
	if target.Config != nil {
		opts.Configs = []Config{*target.Config}
	}
	fails := func(cand []byte) bool {
		if _, ds := lang.Check("prog.te", cand, lang.Config{}); ds.HasErrors() && target.Kind != KindCheck {
			return false
		}
		for _, f := range Run(cand, opts) {
			if f.Class() == class && f.Known == target.Known {
				return true
			}
		}
		return false
	}
	tries := 0
	for progress := true; progress; {
		progress = false
		for k := 0; ; k++ {
			cand, ok := edit(src, k)
			if !ok {
				break
			}
			if cand == nil {
				continue
			}
			if bytes.Equal(cand, src) {
				continue
			}
			tries++
			if maxTries > 0 && tries > maxTries {
				return src
			}
			if fails(cand) {
				src, progress = cand, true
				k-- // the same site may shrink again
			}
		}
	}
	return src
}

// edit applies the k-th edit of src's syntax tree and returns the
// formatted result (nil if that edit cannot be formatted); ok is false
// when src has fewer than k+1 edit sites.
func edit(src []byte, k int) (out []byte, ok bool) {
	f, err := syntax.Parse("prog.te", src)
	if err != nil {
		return nil, false
	}
	e := &editor{k: k}
	e.file(f)
	if !e.done {
		return nil, false
	}
	f.Comments = slices.DeleteFunc(f.Comments, func(c syntax.Comment) bool { return !directive.MatchString(c.Text) })
	out, err = syntax.Format(f, nil)
	if err != nil {
		return nil, true
	}
	if again, err := format(dropInnerBlankLines(out)); err == nil {
		out = again
	}
	return out, true
}

// editor walks a syntax tree counting edit sites and applies the k-th.
type editor struct {
	k    int
	n    int
	done bool
}

// site reports whether the current site is the one to apply.
func (e *editor) site() bool {
	if e.done {
		return false
	}
	if e.n == e.k {
		e.done = true
		return true
	}
	e.n++
	return false
}

func (e *editor) file(f *syntax.File) {
	for i := 0; i < len(f.Decls); i++ {
		if _, model := f.Decls[i].(*syntax.ModelDecl); !model && e.site() {
			f.Decls = slices.Delete(f.Decls, i, i+1)
			return
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *syntax.ConstDecl:
			e.expr(&d.Value)
		case *syntax.FnDecl:
			e.stmts(&d.Body)
			if d.Expr != nil {
				e.expr(&d.Expr)
			}
		case *syntax.ModelDecl:
			e.stmts(&d.Body)
		}
	}
}

func (e *editor) stmts(body *[]syntax.Stmt) {
	for i := 0; i < len(*body); i++ {
		switch (*body)[i].(type) {
		case *syntax.OutputStmt, *syntax.ReturnStmt:
			continue
		}
		if e.site() {
			*body = slices.Delete(*body, i, i+1)
			return
		}
	}
	// bypass a definition: delete it and read a tensor it reads instead
	for i := 0; i < len(*body); i++ {
		a, ok := (*body)[i].(*syntax.AssignStmt)
		if !ok || len(a.Targets) != 1 {
			continue
		}
		for _, to := range readNames(a.Value) {
			if e.site() {
				from := a.Targets[0].Name.Name
				*body = slices.Delete(*body, i, i+1)
				rename(*body, from, to)
				return
			}
		}
	}
	for _, s := range *body {
		e.stmt(s)
	}
}

// readNames returns the names of the tensors that x reads, without repeats.
func readNames(x syntax.Expr) []string {
	var out []string
	walkExpr(&x, func(p *syntax.Expr) {
		var n *syntax.Name
		switch y := (*p).(type) {
		case *syntax.IndexExpr:
			n, _ = y.X.(*syntax.Name)
		case *syntax.Name:
			n = y
		}
		if n != nil && !slices.Contains(out, n.Name) {
			out = append(out, n.Name)
		}
	})
	return out
}

// rename replaces every reference to from in body by to.
func rename(body []syntax.Stmt, from, to string) {
	fix := func(p *syntax.Expr) {
		if n, ok := (*p).(*syntax.Name); ok && n.Name == from {
			*p = &syntax.Name{Ident: syntax.Ident{Name: to}}
		}
	}
	for _, s := range body {
		switch s := s.(type) {
		case *syntax.AssignStmt:
			walkExpr(&s.Value, fix)
		case *syntax.OutputStmt:
			for _, it := range s.Items {
				if it.Value == nil && it.Name.Name == from {
					it.Value = &syntax.Name{Ident: syntax.Ident{Name: to}}
				}
				if it.Value != nil {
					walkExpr(&it.Value, fix)
				}
			}
		case *syntax.ForStmt:
			rename(s.Body, from, to)
		}
	}
}

// walkExpr calls f on every expression in the tree at p, parents first.
func walkExpr(p *syntax.Expr, f func(*syntax.Expr)) {
	if *p == nil {
		return
	}
	f(p)
	switch x := (*p).(type) {
	case *syntax.Unary:
		walkExpr(&x.X, f)
	case *syntax.Binary:
		walkExpr(&x.X, f)
		walkExpr(&x.Y, f)
	case *syntax.Paren:
		walkExpr(&x.X, f)
	case *syntax.Call:
		for i := range x.Args {
			walkExpr(&x.Args[i], f)
		}
	case *syntax.IndexExpr:
		walkExpr(&x.X, f)
		for i := range x.Indices {
			walkExpr(&x.Indices[i], f)
		}
	case *syntax.Reduce:
		walkExpr(&x.Body, f)
	case *syntax.ListExpr:
		for i := range x.Elems {
			walkExpr(&x.Elems[i], f)
		}
	case *syntax.Comprehension:
		walkExpr(&x.Elem, f)
	}
}

func (e *editor) stmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.OutputStmt:
		for i := range s.Items {
			if len(s.Items) > 1 && e.site() {
				s.Items = slices.Delete(s.Items, i, i+1)
				return
			}
		}
	case *syntax.PlaceholderStmt:
		e.typ(s.Type)
	case *syntax.ForStmt:
		e.rng(s.Range)
		e.stmts(&s.Body)
	case *syntax.ConstDecl:
		e.expr(&s.Value)
	case *syntax.AssignStmt:
		for i := range s.Where {
			if e.site() {
				s.Where = slices.Delete(s.Where, i, i+1)
				return
			}
		}
		e.expr(&s.Value)
		for _, w := range s.Where {
			e.rng(w.Range)
		}
	}
}

func (e *editor) typ(t *syntax.TypeExpr) {
	if t == nil {
		return
	}
	for i := range t.Dims {
		e.expr(&t.Dims[i])
	}
}

func (e *editor) rng(r *syntax.RangeExpr) {
	if r != nil {
		e.expr(&r.Hi)
	}
}

var one = &syntax.Number{Text: "1.0", Value: 1}

// expr offers the edits of the expression at p, then those inside it.
func (e *editor) expr(p *syntax.Expr) {
	if e.done || *p == nil {
		return
	}
	// replace by an operand
	for _, c := range operands(*p) {
		if e.site() {
			*p = c
			return
		}
	}
	switch x := (*p).(type) {
	case *syntax.Number:
		if x.IsInt && x.Value > 1 {
			for _, v := range []int{1, int(x.Value) / 2, int(x.Value) - 1} {
				if e.site() {
					*p = &syntax.Number{Text: strconv.Itoa(v), Value: float64(v), IsInt: true}
					return
				}
			}
		}
		return
	case *syntax.Name:
		return
	case *syntax.IndexExpr, *syntax.Call, *syntax.Reduce, *syntax.Binary, *syntax.Unary:
		if e.site() {
			*p = one
			return
		}
	}
	switch x := (*p).(type) {
	case *syntax.Unary:
		e.expr(&x.X)
	case *syntax.Binary:
		e.expr(&x.X)
		e.expr(&x.Y)
	case *syntax.Paren:
		e.expr(&x.X)
	case *syntax.Call:
		for i := range x.Args {
			e.expr(&x.Args[i])
		}
	case *syntax.IndexExpr:
		for i := range x.Indices {
			e.expr(&x.Indices[i])
		}
	case *syntax.Reduce:
		e.expr(&x.Body)
	case *syntax.ListExpr:
		for i := range x.Elems {
			e.expr(&x.Elems[i])
		}
	case *syntax.Comprehension:
		e.expr(&x.Elem)
		e.rng(x.Range)
	}
}

// operands returns the subexpressions that may replace x.
func operands(x syntax.Expr) []syntax.Expr {
	switch x := x.(type) {
	case *syntax.Unary:
		return []syntax.Expr{x.X}
	case *syntax.Binary:
		return []syntax.Expr{x.X, x.Y}
	case *syntax.Paren:
		return []syntax.Expr{x.X}
	case *syntax.Call:
		return x.Args
	}
	return nil
}

// dropInnerBlankLines removes the blank lines inside bodies, which the
// formatter writes between statements of different kinds.
func dropInnerBlankLines(src []byte) []byte {
	lines := bytes.Split(src, []byte("\n"))
	var out [][]byte
	for i, l := range lines {
		if len(l) == 0 && i+1 < len(lines) && bytes.HasPrefix(lines[i+1], []byte("  ")) {
			continue
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}
