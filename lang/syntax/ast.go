// Package syntax holds the abstract syntax tree of the .te language, its parser
// and its formatter. Every node records the span of source text it came from.
//
// The parser (parse.go) is a hand-written recursive-descent parser with one
// token of lookahead, so that every syntax error points at the offending token
// and says in plain words what was expected there. Its tokens come from
// participle's lexer (lexer.go): the token rules are stated once, as data
// (tokenRules, with the operators in one table), and participle generates the
// code that matches them (internal/telexer; see lexer.go to regenerate). It builds
// the AST below, which is what the checker, the formatter (format.go) and the
// language server work on.
package syntax

import "fmt"

// Pos is a position in a source file: a byte offset and a 1-based line and
// column, the column counting runes.
type Pos struct {
	Offset int
	Line   int
	Col    int
}

// String formats the position as line:col.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Span is a half-open range of source text [Start, End).
type Span struct {
	Start, End Pos
}

// Node is implemented by every AST node.
type Node interface {
	NodeSpan() Span
}

// File is a parsed source file.
type File struct {
	Name     string
	Decls    []Decl
	Comments []Comment
	Span     Span
}

// Comment is a '#' comment, Text including the '#'.
type Comment struct {
	Text string
	Span Span
}

// Ident is a name with its position.
type Ident struct {
	Name string
	Span Span
}

// Decl is a top-level declaration: *ImportDecl, *ConstDecl, *FnDecl or *ModelDecl.
type Decl interface {
	Node
	declNode()
}

// ImportDecl is `import "path"`.
type ImportDecl struct {
	Path     string // without quotes
	PathSpan Span
	Span     Span
}

// ConstDecl is `const NAME = expr`, at top level or as a statement.
type ConstDecl struct {
	Name  Ident
	Value Expr
	Span  Span
}

// FnDecl is a function: either a tensor function with a statement body
// (Body != nil), or a scalar function `fn f(a, b) = expr` (Expr != nil).
type FnDecl struct {
	Name    Ident
	Params  []*Param
	Results []*TypeExpr // the declared result types; empty if not declared
	Body    []Stmt
	Expr    Expr
	Span    Span
}

// Param is a function parameter; Type is nil when none is declared.
type Param struct {
	Name Ident
	Type *TypeExpr
	Span Span
}

// TypeExpr is a type: `f32[N, D]` (a tensor type, Dims non-nil), or a bare
// name such as `f32` or `int` (Dims nil).
type TypeExpr struct {
	Name Ident
	Dims []Expr
	Span Span
}

// ModelDecl is `model NAME { ... }`.
type ModelDecl struct {
	Name Ident
	Body []Stmt
	Span Span
}

func (d *ImportDecl) NodeSpan() Span { return d.Span }
func (d *ConstDecl) NodeSpan() Span  { return d.Span }
func (d *FnDecl) NodeSpan() Span     { return d.Span }
func (d *ModelDecl) NodeSpan() Span  { return d.Span }
func (p *Param) NodeSpan() Span      { return p.Span }
func (t *TypeExpr) NodeSpan() Span   { return t.Span }
func (i Ident) NodeSpan() Span       { return i.Span }

func (*ImportDecl) declNode() {}
func (*ConstDecl) declNode()  {}
func (*FnDecl) declNode()     {}
func (*ModelDecl) declNode()  {}

// Stmt is a statement in a model or function body: *PlaceholderStmt,
// *OutputStmt, *ForStmt, *ReturnStmt, *ConstDecl or *AssignStmt.
type Stmt interface {
	Node
	stmtNode()
}

// PlaceholderStmt declares a model input or param: `input x: f32[N, D]`.
type PlaceholderStmt struct {
	Kind string // "input" or "param"
	Name Ident
	Type *TypeExpr
	Span Span
}

// OutputStmt is `output a, b = expr, ...`.
type OutputStmt struct {
	Items []*OutputItem
	Span  Span
}

// OutputItem is one name of an output statement, with an optional value.
type OutputItem struct {
	Name  Ident
	Value Expr // nil for `output y`
	Span  Span
}

// ForStmt is a compile-time loop `for v in lo..hi { ... }`.
type ForStmt struct {
	Var   Ident
	Range *RangeExpr
	Body  []Stmt
	Span  Span
}

// ReturnStmt is `return a, b`.
type ReturnStmt struct {
	Values []Expr
	Span   Span
}

// AssignStmt binds names: `y[i, j] = expr where i in 0..N`, `a = f(x)`,
// `h[l], c[l] = cell(...)`.
//
// With Update set it is `update x[i, pos[b], j] = expr where ...`: an
// in-place update of the input x, with one target whose indices are
// expressions.
type AssignStmt struct {
	Update  bool
	Targets []*Target
	Value   Expr
	Where   []*WhereClause
	Span    Span
}

// Target is the left side of one binding: a name, with indices when it defines
// a tensor element-wise or assigns a list element.
type Target struct {
	Name    Ident
	Indices []Expr // nil when the target has no brackets
	Span    Span
}

// WhereClause is `v in lo..hi`, stating an index variable's range.
type WhereClause struct {
	Var   Ident
	Range *RangeExpr
	Span  Span
}

func (s *PlaceholderStmt) NodeSpan() Span { return s.Span }
func (s *OutputStmt) NodeSpan() Span      { return s.Span }
func (s *OutputItem) NodeSpan() Span      { return s.Span }
func (s *ForStmt) NodeSpan() Span         { return s.Span }
func (s *ReturnStmt) NodeSpan() Span      { return s.Span }
func (s *AssignStmt) NodeSpan() Span      { return s.Span }
func (t *Target) NodeSpan() Span          { return t.Span }
func (w *WhereClause) NodeSpan() Span     { return w.Span }

func (*PlaceholderStmt) stmtNode() {}
func (*OutputStmt) stmtNode()      {}
func (*ForStmt) stmtNode()         {}
func (*ReturnStmt) stmtNode()      {}
func (*ConstDecl) stmtNode()       {}
func (*AssignStmt) stmtNode()      {}

// Expr is an expression: *Name, *Number, *Unary, *Binary, *Call, *IndexExpr,
// *Reduce, *Paren, *ListExpr, *Comprehension or *RangeExpr.
type Expr interface {
	Node
	exprNode()
}

// Name is a reference to a named thing.
type Name struct {
	Ident
}

// Number is a numeric literal.
type Number struct {
	Text  string
	Value float64
	IsInt bool
	Span  Span
}

// Unary is `-x` or `!x`.
type Unary struct {
	Op   string
	X    Expr
	Span Span
}

// Binary is `x op y` for op in || && == != < <= > >= + - * / % **.
type Binary struct {
	Op   string
	X, Y Expr
	Span Span
}

// Call is `fun(args)`: a function, a builtin, a dtype cast such as `f16(x)`.
type Call struct {
	Fun  Expr
	Args []Expr
	Span Span
}

// IndexExpr is `x[i, j]`: an element access, a view `W[l]`, a list element, or
// a type `f32[B, H]` in an argument position such as zeros(f32[B, H]).
type IndexExpr struct {
	X       Expr
	Indices []Expr
	Span    Span
}

// Reduce is `op[axes](body)` for op in sum, max, min, prod.
type Reduce struct {
	Op   Ident
	Axes []Ident
	Body Expr
	Span Span
}

// Paren is `(x)`, kept so that the formatter preserves the author's grouping.
type Paren struct {
	X    Expr
	Span Span
}

// ListExpr is a compile-time list `[a, b, c]`.
type ListExpr struct {
	Elems []Expr
	Span  Span
}

// Comprehension is `[elem for v in lo..hi]`.
type Comprehension struct {
	Elem  Expr
	Var   Ident
	Range *RangeExpr
	Span  Span
}

// RangeExpr is `lo..hi`, the half-open integer range [lo, hi).
type RangeExpr struct {
	Lo, Hi Expr
	Span   Span
}

func (e *Name) NodeSpan() Span          { return e.Span }
func (e *Number) NodeSpan() Span        { return e.Span }
func (e *Unary) NodeSpan() Span         { return e.Span }
func (e *Binary) NodeSpan() Span        { return e.Span }
func (e *Call) NodeSpan() Span          { return e.Span }
func (e *IndexExpr) NodeSpan() Span     { return e.Span }
func (e *Reduce) NodeSpan() Span        { return e.Span }
func (e *Paren) NodeSpan() Span         { return e.Span }
func (e *ListExpr) NodeSpan() Span      { return e.Span }
func (e *Comprehension) NodeSpan() Span { return e.Span }
func (e *RangeExpr) NodeSpan() Span     { return e.Span }

func (*Name) exprNode()          {}
func (*Number) exprNode()        {}
func (*Unary) exprNode()         {}
func (*Binary) exprNode()        {}
func (*Call) exprNode()          {}
func (*IndexExpr) exprNode()     {}
func (*Reduce) exprNode()        {}
func (*Paren) exprNode()         {}
func (*ListExpr) exprNode()      {}
func (*Comprehension) exprNode() {}
func (*RangeExpr) exprNode()     {}

// IsReduceOp reports whether name introduces a reduction when followed by
// [axes](body): sum, max, min, prod, argmax or argmin.
func IsReduceOp(name string) bool {
	switch name {
	case "sum", "max", "min", "prod", "argmax", "argmin":
		return true
	}
	return false
}
