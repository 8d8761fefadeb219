package syntax

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// IsKeyword reports whether s is a reserved word of the language, which
// cannot name anything.
func IsKeyword(s string) bool {
	switch s {
	case "import", "const", "fn", "model", "input", "param", "output", "for", "in", "return", "where":
		return true
	}
	return false
}

func newLexer() *lexer.StatefulDefinition {
	return lexer.MustSimple([]lexer.SimpleRule{
		{Name: "Comment", Pattern: `#[^\n]*`},
		{Name: "String", Pattern: `"[^"\n]*"`},
		{Name: "Float", Pattern: `[0-9]+\.[0-9]+([eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+`},
		{Name: "Int", Pattern: `[0-9]+`},
		{Name: "Keyword", Pattern: `(import|const|fn|model|input|param|output|for|in|return|where)\b`},
		{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
		{Name: "Op", Pattern: `\.\.|->|==|!=|<=|>=|&&|\|\||[-+*/%<>=!(){}\[\],:]`},
		{Name: "Whitespace", Pattern: `[ \t\r\n]+`},
	})
}

func newParser() *participle.Parser[gFile] {
	return participle.MustBuild[gFile](
		participle.Lexer(newLexer()),
		participle.Elide("Comment", "Whitespace"),
		participle.UseLookahead(2),
	)
}

// The grammar. Each g* type is one production; convert.go turns the result
// into the AST. Pos and EndPos are filled in by participle.

type gFile struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Decls  []*gDecl `parser:"@@*"`
}

type gDecl struct {
	Import *gImport `parser:"  @@"`
	Const  *gConst  `parser:"| @@"`
	Fn     *gFn     `parser:"| @@"`
	Model  *gModel  `parser:"| @@"`
}

type gIdent struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Name   string `parser:"@Ident"`
}

type gImport struct {
	Pos     lexer.Position
	EndPos  lexer.Position
	PathPos lexer.Position
	Path    string `parser:"'import' @String"`
}

type gConst struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Name   *gIdent `parser:"'const' @@ '='"`
	Value  *gExpr  `parser:"@@"`
}

type gFn struct {
	Pos     lexer.Position
	EndPos  lexer.Position
	Name    *gIdent   `parser:"'fn' @@"`
	Params  []*gParam `parser:"'(' ( @@ ( ',' @@ )* )? ')'"`
	Results []*gType  `parser:"( '->' ( '(' @@ ( ',' @@ )* ')' | @@ ) )?"`
	Expr    *gExpr    `parser:"( '=' @@"`
	Body    *gBlock   `parser:"| @@ )"`
}

type gParam struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Name   *gIdent `parser:"@@"`
	Type   *gType  `parser:"( ':' @@ )?"`
}

type gType struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Name   *gIdent `parser:"@@"`
	Dims   *gDims  `parser:"@@?"`
}

type gDims struct {
	List []*gExpr `parser:"'[' ( @@ ( ',' @@ )* )? ']'"`
}

type gModel struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Name   *gIdent `parser:"'model' @@"`
	Body   *gBlock `parser:"@@"`
}

type gBlock struct {
	Stmts []*gStmt `parser:"'{' @@* '}'"`
}

type gStmt struct {
	Placeholder *gPlaceholder `parser:"  @@"`
	Output      *gOutput      `parser:"| @@"`
	For         *gFor         `parser:"| @@"`
	Return      *gReturn      `parser:"| @@"`
	Const       *gConst       `parser:"| @@"`
	Assign      *gAssign      `parser:"| @@"`
}

type gPlaceholder struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Kind   string  `parser:"@('input' | 'param')"`
	Name   *gIdent `parser:"@@ ':'"`
	Type   *gType  `parser:"@@"`
}

type gOutput struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Items  []*gOutputItem `parser:"'output' @@ ( ',' @@ )*"`
}

type gOutputItem struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Name   *gIdent `parser:"@@"`
	Value  *gExpr  `parser:"( '=' @@ )?"`
}

type gFor struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Var    *gIdent `parser:"'for' @@ 'in'"`
	Range  *gRange `parser:"@@"`
	Body   *gBlock `parser:"@@"`
}

type gRange struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Lo     *gExpr `parser:"@@ '..'"`
	Hi     *gExpr `parser:"@@"`
}

type gReturn struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Values []*gExpr `parser:"'return' @@ ( ',' @@ )*"`
}

type gAssign struct {
	Pos     lexer.Position
	EndPos  lexer.Position
	Targets []*gTarget `parser:"@@ ( ',' @@ )* '='"`
	Value   *gExpr     `parser:"@@"`
	Where   []*gWhere  `parser:"( 'where' @@ ( ',' @@ )* )?"`
}

type gTarget struct {
	Pos     lexer.Position
	EndPos  lexer.Position
	Name    *gIdent `parser:"@@"`
	Indices *gDims  `parser:"@@?"`
}

type gWhere struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Var    *gIdent `parser:"@@ 'in'"`
	Range  *gRange `parser:"@@"`
}

// Expressions, loosest binding first.

type gExpr struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Left   *gAnd    `parser:"@@"`
	Rest   []*gOrOp `parser:"@@*"`
}

type gOrOp struct {
	OpPos lexer.Position
	Op    string `parser:"@'||'"`
	Right *gAnd  `parser:"@@"`
}

type gAnd struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Left   *gCmp     `parser:"@@"`
	Rest   []*gAndOp `parser:"@@*"`
}

type gAndOp struct {
	Op    string `parser:"@'&&'"`
	Right *gCmp  `parser:"@@"`
}

type gCmp struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Left   *gAdd  `parser:"@@"`
	Op     string `parser:"( @('==' | '!=' | '<=' | '>=' | '<' | '>')"`
	Right  *gAdd  `parser:"  @@ )?"`
}

type gAdd struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Left   *gMul     `parser:"@@"`
	Rest   []*gAddOp `parser:"@@*"`
}

type gAddOp struct {
	Op    string `parser:"@('+' | '-')"`
	Right *gMul  `parser:"@@"`
}

type gMul struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Left   *gUnary   `parser:"@@"`
	Rest   []*gMulOp `parser:"@@*"`
}

type gMulOp struct {
	Op    string  `parser:"@('*' | '/' | '%')"`
	Right *gUnary `parser:"@@"`
}

type gUnary struct {
	Pos     lexer.Position
	EndPos  lexer.Position
	Op      string    `parser:"( @('-' | '!')"`
	X       *gUnary   `parser:"  @@ )"`
	Postfix *gPostfix `parser:"| @@"`
}

type gPostfix struct {
	Pos     lexer.Position
	EndPos  lexer.Position
	Primary *gPrimary  `parser:"@@"`
	Suffix  []*gSuffix `parser:"@@*"`
}

type gSuffix struct {
	EndPos lexer.Position
	Index  *gDims `parser:"  @@"`
	Call   *gArgs `parser:"| @@"`
}

type gArgs struct {
	List []*gExpr `parser:"'(' ( @@ ( ',' @@ )* )? ')'"`
}

type gPrimary struct {
	Pos    lexer.Position
	EndPos lexer.Position
	Number *string `parser:"  @(Float | Int)"`
	Ident  *gIdent `parser:"| @@"`
	Paren  *gExpr  `parser:"| '(' @@ ')'"`
	List   *gList  `parser:"| @@"`
}

type gList struct {
	First *gExpr    `parser:"'[' ( @@"`
	Comp  *gCompFor `parser:"  ( @@"`
	Rest  []*gExpr  `parser:"  | ( ',' @@ )+ )? )? ']'"`
}

type gCompFor struct {
	Var   *gIdent `parser:"'for' @@ 'in'"`
	Range *gRange `parser:"@@"`
}
