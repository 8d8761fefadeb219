package kir

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"tec/te"
)

// String returns the module's text form, as Fprint writes it.
func (m *Module) String() string {
	var b strings.Builder
	Fprint(&b, m) // a strings.Builder never fails
	return b.String()
}

// Fprint writes the module's text form to w. The form is stable (the same
// module always prints the same text) and close to the CUDA C++ it becomes:
//
//	module softmax
//	buffer x: input f32[4, 8]
//	buffer m: temp f32[4]
//
//	// m = max(x[i, j], axis=[j:8])
//	kernel m grid(1) block(32) params(x, m) {
//	  shared red: f32[32]
//	  stage m @ softmax.te:7:3 {
//	    for i = threadstride(0, 4) {
//	      let acc: f32 = -inf
//	      for k = serial(0, 8, 1) {
//	        acc = max(acc, x[i*8 + k])
//	      }
//	      m[i] = acc
//	    }
//	  }
//	}
//
// Loads and stores name the buffer, whose declaration gives its space. Loops
// print their kind, bounds and (for serial ones) step. Variables of a kernel
// that share a name get a suffix (k, k_1, ...).
func Fprint(w io.Writer, m *Module) error {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n", m.Name)
	for _, buf := range m.Buffers {
		fmt.Fprintf(&b, "buffer %s: %s %s\n", buf.Name, buf.Role, typeString(buf))
	}
	if len(m.Outputs) > 0 {
		b.WriteString("outputs(")
		for i, o := range m.Outputs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(o.Name)
		}
		b.WriteString(")\n")
	}
	for _, k := range m.Kernels {
		b.WriteByte('\n')
		writeKernel(&b, k)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("kir: printing module %q: %w", m.Name, err)
	}
	return nil
}

// String returns the kernel's text form.
func (k *Kernel) String() string {
	var b strings.Builder
	writeKernel(&b, k)
	return b.String()
}

func typeString(buf *Buffer) string {
	dims := make([]string, len(buf.Shape))
	for i, d := range buf.Shape {
		dims[i] = strconv.Itoa(d)
	}
	return buf.DType.String() + "[" + strings.Join(dims, ", ") + "]"
}

func writeKernel(b *strings.Builder, k *Kernel) {
	for _, line := range strings.Split(k.Doc, "\n") {
		if line != "" {
			fmt.Fprintf(b, "// %s\n", line)
		}
	}
	fmt.Fprintf(b, "kernel %s %s block(%d) params(", k.Name, k.Grid, k.Block)
	for i, p := range k.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
	}
	b.WriteString(") {\n")
	pr := &printer{b: b, names: map[*Var]string{}, used: map[string]bool{}}
	for _, s := range k.Shared {
		fmt.Fprintf(b, "  shared %s: %s\n", s.Name, typeString(s))
	}
	for _, l := range k.Locals {
		fmt.Fprintf(b, "  local %s: %s\n", l.Name, typeString(l))
	}
	pr.stmts(k.Body, 1)
	b.WriteString("}\n")
}

// printer writes statements and expressions of one kernel.
type printer struct {
	b     *strings.Builder
	names map[*Var]string
	used  map[string]bool
	// next is, for a base name, the least suffix not known to be used:
	// probing from 1 for each of many variables of one name (every stage's
	// "i") would make printing quadratic.
	next map[string]int
}

// name returns v's printed name, choosing a unique one on first sight.
func (p *printer) name(v *Var) string {
	if n, ok := p.names[v]; ok {
		return n
	}
	base := v.Name
	if base == "" {
		base = "v"
	}
	n := base
	if p.used[n] {
		if p.next == nil {
			p.next = map[string]int{}
		}
		i := max(p.next[base], 1)
		for n = fmt.Sprintf("%s_%d", base, i); p.used[n]; n = fmt.Sprintf("%s_%d", base, i) {
			i++
		}
		p.next[base] = i + 1
	}
	p.names[v], p.used[n] = n, true
	return n
}

func (p *printer) line(depth int, format string, args ...any) {
	p.b.WriteString(strings.Repeat("  ", depth))
	fmt.Fprintf(p.b, format, args...)
	p.b.WriteByte('\n')
}

func (p *printer) stmts(body []Stmt, depth int) {
	for _, s := range body {
		p.stmt(s, depth)
	}
}

func (p *printer) stmt(s Stmt, depth int) {
	switch s := s.(type) {
	case *Let:
		p.line(depth, "let %s: %s = %s", p.name(s.Var), s.Var.T, p.expr(s.Value))
	case *Assign:
		p.line(depth, "%s = %s", p.name(s.Var), p.expr(s.Value))
	case *Store:
		p.line(depth, "%s[%s] = %s", bufName(s.Buf), p.expr(s.Index), p.expr(s.Value))
	case *Atomic:
		p.line(depth, "atomic.%s(%s[%s], %s)", s.Op, bufName(s.Buf), p.expr(s.Index), p.expr(s.Value))
	case *If:
		p.line(depth, "if %s {", p.expr(s.Cond))
		p.stmts(s.Then, depth+1)
		if len(s.Else) > 0 {
			p.line(depth, "} else {")
			p.stmts(s.Else, depth+1)
		}
		p.line(depth, "}")
	case *For:
		v := p.name(s.Var)
		switch s.Kind {
		case Serial, Unrolled:
			unroll := ""
			if s.Unroll > 0 {
				unroll = fmt.Sprintf(" unroll %d", s.Unroll)
			}
			p.line(depth, "for %s = %s(%s, %s, %d)%s {", v, s.Kind, p.expr(s.Lo), p.expr(s.Hi), s.Step, unroll)
		default:
			p.line(depth, "for %s = %s(%s, %s) {", v, s.Kind, p.expr(s.Lo), p.expr(s.Hi))
		}
		p.stmts(s.Body, depth+1)
		p.line(depth, "}")
	case *SyncThreads:
		p.line(depth, "syncthreads")
	case *GridSync:
		p.line(depth, "gridsync")
	case *Signal:
		p.line(depth, "signal %s[%s]", s.Counter.Name, p.expr(s.Index))
	case *Wait:
		p.line(depth, "wait %s[%s] >= %s", s.Counter.Name, p.expr(s.Index), p.expr(s.Target))
	case *Stage:
		if s.Span.IsValid() {
			p.line(depth, "stage %s @ %s {", s.Name, s.Span)
		} else {
			p.line(depth, "stage %s {", s.Name)
		}
		p.stmts(s.Body, depth+1)
		p.line(depth, "}")
	case *MMA:
		p.line(depth, "%s = mma.%s.%s(%s, %s, %s)", frag(s.D), s.Shape, mmaType(s), frag(s.A), frag(s.B), frag(s.C))
	case *LdMatrix:
		trans := ""
		if s.Trans {
			trans = ".trans"
		}
		p.line(depth, "%s = ldmatrix.x%d%s(%s[%s])", frag(s.Dst), s.Num, trans, bufName(s.Src), p.expr(s.Index))
	case *VecCopy:
		n := vecLen(s.Src)
		if s.Bytes != 0 && s.Src != nil && s.Src.DType.Size() != 0 {
			n = s.Bytes / s.Src.DType.Size()
		}
		p.line(depth, "%s[%s] = vec%d(%s[%s])", bufName(s.Dst), p.expr(s.DstIndex), n, bufName(s.Src), p.expr(s.SrcIndex))
	case *CopyAsync:
		kind := "ca"
		if s.Bypass {
			kind = "cg"
		}
		p.line(depth, "cp.async.%s %s[%s] = vec%d(%s[%s])", kind, bufName(s.Dst), p.expr(s.DstIndex), vecLen(s.Src), bufName(s.Src), p.expr(s.SrcIndex))
	case *Prefetch:
		p.line(depth, "prefetch.L2 %s[%s]", bufName(s.Buf), p.expr(s.Index))
	case *CommitGroup:
		p.line(depth, "cp.async.commit_group")
	case *WaitGroup:
		p.line(depth, "cp.async.wait_group %d", s.N)
	case nil:
		p.line(depth, "<nil>")
	default:
		p.line(depth, "<%T>", s)
	}
}

// frag formats a fragment as "name@offset".
func frag(f Frag) string { return fmt.Sprintf("%s@%d", bufName(f.Buf), f.Off) }

// mmaType names an MMA's operand type as PTX does: f16, bf16 or tf32.
func mmaType(s *MMA) string {
	if s.In == te.F32 {
		return "tf32"
	}
	return s.In.String()
}

// vecLen returns the elements of a 16-byte vector of b's type, 0 for none.
func vecLen(b *Buffer) int {
	if b == nil || b.DType.Size() == 0 {
		return 0
	}
	return VecLen(b.DType)
}

func bufName(b *Buffer) string {
	if b == nil {
		return "<nil>"
	}
	return b.Name
}

// Precedences of the infix operators, loosest first.
const (
	precOr = iota + 1
	precAnd
	precCmp
	precAdd
	precMul
	precUnary
	precAtom
)

func binaryPrec(op te.BinaryOp) int {
	switch op {
	case te.Or:
		return precOr
	case te.And:
		return precAnd
	case te.Lt, te.Le, te.Gt, te.Ge, te.Eq, te.Ne:
		return precCmp
	case te.Add, te.Sub:
		return precAdd
	case te.Mul, te.Div, te.Mod:
		return precMul
	}
	return precAtom // max, min, pow: calls
}

func (p *printer) expr(e Expr) string {
	var b strings.Builder
	p.exprPrec(&b, e, 0)
	return b.String()
}

// exprPrec writes e, in parentheses if its precedence is below min.
func (p *printer) exprPrec(b *strings.Builder, e Expr, min int) {
	switch e := e.(type) {
	case *Const:
		b.WriteString(FormatConst(e))
	case *Var:
		b.WriteString(p.name(e))
	case *Special:
		b.WriteString(e.Reg.String())
	case *Load:
		b.WriteString(bufName(e.Buf))
		b.WriteByte('[')
		p.exprPrec(b, e.Index, 0)
		b.WriteByte(']')
	case *Unary:
		switch e.Op {
		case te.Neg, te.Not:
			if min > precUnary {
				b.WriteByte('(')
			}
			if e.Op == te.Neg {
				b.WriteByte('-')
			} else {
				b.WriteByte('!')
			}
			p.exprPrec(b, e.X, precUnary+1)
			if min > precUnary {
				b.WriteByte(')')
			}
		default:
			p.call(b, e.Op.String(), e.X)
		}
	case *Binary:
		prec := binaryPrec(e.Op)
		if prec == precAtom {
			p.call(b, e.Op.String(), e.X, e.Y)
			return
		}
		if prec < min {
			b.WriteByte('(')
		}
		p.exprPrec(b, e.X, prec)
		b.WriteString(" " + e.Op.String() + " ")
		p.exprPrec(b, e.Y, prec+1)
		if prec < min {
			b.WriteByte(')')
		}
	case *Select:
		p.call(b, "select", e.Cond, e.Then, e.Else)
	case *Cast:
		p.call(b, e.To.String(), e.X)
	case *Shuffle:
		fmt.Fprintf(b, "shfl.%s(", e.Mode)
		p.exprPrec(b, e.X, 0)
		fmt.Fprintf(b, ", %d, %d, ", e.Offset, e.Width)
		if c, ok := e.Mask.(*Const); ok && c.T == te.I32 {
			fmt.Fprintf(b, "0x%08x", uint32(int32(c.Value)))
		} else {
			p.exprPrec(b, e.Mask, 0)
		}
		b.WriteByte(')')
	case *Bounded:
		b.WriteString("bounded(")
		p.exprPrec(b, e.X, 0)
		fmt.Fprintf(b, ", %d", e.N)
		if e.Record != nil {
			fmt.Fprintf(b, ", report %s site %d at ", e.Record.Name, e.Site)
			if e.At == nil {
				b.WriteString("-1")
			} else {
				p.exprPrec(b, e.At, 0)
			}
		}
		b.WriteByte(')')
	case nil:
		b.WriteString("<nil>")
	default:
		fmt.Fprintf(b, "<%T>", e)
	}
}

func (p *printer) call(b *strings.Builder, fn string, args ...Expr) {
	b.WriteString(fn)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		p.exprPrec(b, a, 0)
	}
	b.WriteByte(')')
}

// FormatConst formats a constant as in the text form: "3" for i32, "true"
// for bool, and for f32 the shortest decimal that reads back as the same
// float32, always with a point or an exponent ("1.0", "1e-12", "inf").
func FormatConst(c *Const) string {
	switch c.T {
	case te.Bool:
		if c.Value != 0 {
			return "true"
		}
		return "false"
	case te.I32, te.I64:
		return strconv.FormatInt(int64(c.Value), 10)
	}
	v := c.Value
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		return "nan"
	}
	s := strconv.FormatFloat(v, 'g', -1, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
