package lsp

import "tec/lang/syntax"

// inspect calls f for n and, while f returns true, for every node below it
// in source order, including the syntax.Ident of every name (declared or
// used). Nil nodes are skipped.
func inspect(n syntax.Node, f func(syntax.Node) bool) {
	if isNil(n) || !f(n) {
		return
	}
	switch n := n.(type) {
	case *syntax.ConstDecl:
		inspect(n.Name, f)
		inspect(n.Value, f)
	case *syntax.FnDecl:
		inspect(n.Name, f)
		for _, p := range n.Params {
			inspect(p, f)
		}
		for _, r := range n.Results {
			inspect(r, f)
		}
		inspectStmts(n.Body, f)
		inspect(n.Expr, f)
	case *syntax.Param:
		inspect(n.Name, f)
		if n.Type != nil {
			inspect(n.Type, f)
		}
	case *syntax.TypeExpr:
		inspect(n.Name, f)
		for _, d := range n.Dims {
			inspect(d, f)
		}
	case *syntax.ModelDecl:
		inspect(n.Name, f)
		inspectStmts(n.Body, f)
	case *syntax.PlaceholderStmt:
		inspect(n.Name, f)
		if n.Type != nil {
			inspect(n.Type, f)
		}
	case *syntax.OutputStmt:
		for _, it := range n.Items {
			inspect(it, f)
		}
	case *syntax.OutputItem:
		inspect(n.Name, f)
		inspect(n.Value, f)
	case *syntax.ForStmt:
		inspect(n.Var, f)
		if n.Range != nil {
			inspect(n.Range, f)
		}
		inspectStmts(n.Body, f)
	case *syntax.ReturnStmt:
		for _, v := range n.Values {
			inspect(v, f)
		}
	case *syntax.AssignStmt:
		for _, t := range n.Targets {
			inspect(t, f)
		}
		inspect(n.Value, f)
		for _, w := range n.Where {
			inspect(w, f)
		}
	case *syntax.Target:
		inspect(n.Name, f)
		for _, x := range n.Indices {
			inspect(x, f)
		}
	case *syntax.WhereClause:
		inspect(n.Var, f)
		if n.Range != nil {
			inspect(n.Range, f)
		}
	case *syntax.Name:
		inspect(n.Ident, f)
	case *syntax.Unary:
		inspect(n.X, f)
	case *syntax.Binary:
		inspect(n.X, f)
		inspect(n.Y, f)
	case *syntax.Call:
		inspect(n.Fun, f)
		for _, a := range n.Args {
			inspect(a, f)
		}
	case *syntax.IndexExpr:
		inspect(n.X, f)
		for _, x := range n.Indices {
			inspect(x, f)
		}
	case *syntax.Reduce:
		inspect(n.Op, f)
		for _, a := range n.Axes {
			inspect(a, f)
		}
		inspect(n.Body, f)
	case *syntax.Paren:
		inspect(n.X, f)
	case *syntax.ListExpr:
		for _, e := range n.Elems {
			inspect(e, f)
		}
	case *syntax.Comprehension:
		inspect(n.Elem, f)
		inspect(n.Var, f)
		if n.Range != nil {
			inspect(n.Range, f)
		}
	case *syntax.RangeExpr:
		inspect(n.Lo, f)
		inspect(n.Hi, f)
	}
}

// inspectFile inspects every declaration of file, which may be nil.
func inspectFile(file *syntax.File, f func(syntax.Node) bool) {
	if file == nil {
		return
	}
	for _, d := range file.Decls {
		inspect(d, f)
	}
}

func inspectStmts(ss []syntax.Stmt, f func(syntax.Node) bool) {
	for _, s := range ss {
		inspect(s, f)
	}
}

// isNil reports whether n is nil or a typed nil pointer.
func isNil(n syntax.Node) bool {
	switch n := n.(type) {
	case nil:
		return true
	case syntax.Ident:
		return false
	case *syntax.ConstDecl:
		return n == nil
	case *syntax.FnDecl:
		return n == nil
	case *syntax.Param:
		return n == nil
	case *syntax.TypeExpr:
		return n == nil
	case *syntax.ModelDecl:
		return n == nil
	case *syntax.ImportDecl:
		return n == nil
	case *syntax.PlaceholderStmt:
		return n == nil
	case *syntax.OutputStmt:
		return n == nil
	case *syntax.OutputItem:
		return n == nil
	case *syntax.ForStmt:
		return n == nil
	case *syntax.ReturnStmt:
		return n == nil
	case *syntax.AssignStmt:
		return n == nil
	case *syntax.Target:
		return n == nil
	case *syntax.WhereClause:
		return n == nil
	case *syntax.Name:
		return n == nil
	case *syntax.Number:
		return n == nil
	case *syntax.Unary:
		return n == nil
	case *syntax.Binary:
		return n == nil
	case *syntax.Call:
		return n == nil
	case *syntax.IndexExpr:
		return n == nil
	case *syntax.Reduce:
		return n == nil
	case *syntax.Paren:
		return n == nil
	case *syntax.ListExpr:
		return n == nil
	case *syntax.Comprehension:
		return n == nil
	case *syntax.RangeExpr:
		return n == nil
	}
	return false
}

// enclosingDecl returns the top-level declaration of f that contains the
// byte offset, or nil.
func enclosingDecl(f *syntax.File, off int) syntax.Decl {
	if f == nil {
		return nil
	}
	for _, d := range f.Decls {
		sp := d.NodeSpan()
		if sp.Start.Offset <= off && off <= sp.End.Offset {
			return d
		}
	}
	return nil
}

// enclosingStmt returns the innermost statement of decl that contains the
// byte offset (a statement inside a for loop rather than the loop), or nil.
func enclosingStmt(decl syntax.Decl, off int) syntax.Stmt {
	var body []syntax.Stmt
	switch d := decl.(type) {
	case *syntax.FnDecl:
		body = d.Body
	case *syntax.ModelDecl:
		body = d.Body
	}
	for {
		var found syntax.Stmt
		for _, s := range body {
			sp := s.NodeSpan()
			if sp.Start.Offset <= off && off <= sp.End.Offset {
				found = s
				break
			}
		}
		if found == nil {
			return nil
		}
		fs, ok := found.(*syntax.ForStmt)
		if !ok {
			return found
		}
		inner := false
		for _, s := range fs.Body {
			sp := s.NodeSpan()
			if sp.Start.Offset <= off && off <= sp.End.Offset {
				inner = true
			}
		}
		if !inner {
			return found
		}
		body = fs.Body
	}
}
