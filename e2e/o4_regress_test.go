package e2e

import (
	"fmt"
	"testing"

	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// o4Regressions are programs that -O4's subprogram-level reuse once
// miscompiled (issue 17), each with the constants it was found at and
// variants of it that reach the same mechanisms another way.
var o4Regressions = []struct {
	name    string
	src     string
	defines map[string]string
}{
	// F4: mx stays in shared memory; the independent stage z took the
	// first 50 blocks of the epoch, which pushed mu and mx past them, while
	// y, after a grid sync, read mx from the blocks numbered by its rows.
	{"f4", f4Src, nil},
	{"f4/R=129", f4Src, map[string]string{"R": "129"}},
	// Two results on chip, read by a row reduction and a Rows stage in the
	// next epoch, with an independent reduction and stage before them.
	{"onchip-two", onChipTwoSrc, nil},
	// F5: an element-wise-scheduled reduction over the resident stage's
	// columns (y reads g[j, k] for all k) was put in g's epilogue, with an
	// axis (i) that nothing bound.
	{"f5", f5Src, nil},
	{"f5/B=3", f5Src, map[string]string{"B": "3"}},
	// F6: the same reduction read a[n, k] for all k in a's epilogue,
	// written by other threads: a race and NaNs.
	{"f6", f6Src, nil},
	{"f6/a-output/B=1", f6OutSrc, nil},
	{"f6/a-output/B=2/N=12", f6OutSrc, map[string]string{"B": "2", "N": "12"}},
	{"f6/a-output/B=8/N=16", f6OutSrc, map[string]string{"B": "8", "N": "16"}},
	// A transposed element-wise consumer, which does belong in the
	// epilogue, and a reduction over its columns, which does not.
	{"epilogue-transposed/B=3", transposedSrc, map[string]string{"B": "3"}},
	// Epilogues over groups of two batch entries (gates), and a max over
	// the resident stage's columns beside them.
	{"epilogue-gates", gatesSrc, nil},
	{"epilogue-gates/B=3/N=32", gatesSrc, map[string]string{"B": "3", "N": "32"}},
}

const f4Src = `
const R = 500
model m {
  input x: f32[R, 100]
  param w: f32[100, 127]
  t = max[a, b](x[a, b])
  z = w - t
  mu[p] = sum[q](x[p, q]) / 100
  mx[p] = max[q](x[p, q] - mu[p])
  y[p, q] = x[p, q] - mx[p] + mu[R - 1 - p]
  output z, y
}
`

const onChipTwoSrc = `
const R = 200
model m {
  input x: f32[R, 96]
  input v: f32[R, 96]
  param w: f32[96, 300]
  t = sum[a, b](v[a, b])
  z = w * t
  mu[p] = sum[q](x[p, q]) / 96
  mx[p] = max[q](x[p, q] - mu[p])
  r[p] = sum[q](x[p, q] * mx[p] + mu[R - 1 - p])
  y[p, q] = x[p, q] - r[p] + mx[p]
  output z, y
}
`

const f5Src = `
const B = 1
model m {
  input x: f32[B, 12]
  param w: f32[12, 12]
  param u: f32[12, 12]
  h[n, j] = sum[k](x[n, k] * u[k, j])
  g[n, j] = sum[k](h[n, k] * u[k, j])
  y[i, j] = sum[k](w[i, k] * g[j, k])
  output y
}
`

const f6Src = `
model m {
  input x: f32[1, 8]
  param u: f32[8, 8]
  h[n, j] = sum[k](x[n, k] * u[k, j])
  g[n, j] = sum[k](h[n, k] * u[k, j])
  a[n, j] = tanh(g[n, j])
  y[j, n] = sum[k](u[k, j] * a[n, k])
  output y
}
`

const f6OutSrc = `
const B = 1
const N = 8
model m {
  input x: f32[B, N]
  param u: f32[N, N]
  h[n, j] = sum[k](x[n, k] * u[k, j])
  g[n, j] = sum[k](h[n, k] * u[k, j])
  a[n, j] = tanh(g[n, j])
  y[j, n] = sum[k](u[k, j] * a[n, k])
  output a, y
}
`

const transposedSrc = `
const B = 1
const N = 8
model m {
  input x: f32[B, N]
  param u: f32[N, N]
  h[n, j] = sum[k](x[n, k] * u[k, j])
  g[n, j] = sum[k](h[n, k] * u[k, j])
  at[j, n] = tanh(g[n, j])
  b[n, j] = at[j, n] * g[n, j]
  y[n, j] = sum[k](at[k, n] * u[k, j]) + b[n, j]
  output at, b, y
}
`

const gatesSrc = `
const N = 16
const B = 1
model m {
  input x: f32[2, B, N]
  param u: f32[2, N, N]
  param v: f32[N, N]
  h[q, n, j] = sum[k](x[q, n, k] * u[q, k, j])
  c1[n, j] = tanh(h[0, n, j]) * sigmoid(h[1, n, j])
  g[q, n, j] = sum[k]((c1[n, k] + x[q, n, k]) * u[q, k, j])
  c2[n, j] = tanh(g[0, n, j]) * sigmoid(g[1, n, j])
  c2t[j, n] = c2[n, j] * 0.5 + g[1, n, j]
  s[n, j] = max[k](g[0, n, k] + v[k, j])
  r[n, j] = c2[n, N - 1 - j] + c1[n, j] where j in 0..N
  output c1, c2, c2t, s, r
}
`

// TestO4Regress runs every program of o4Regressions at -O4 on the A100,
// H100 and small GPU models, with and without deterministic reductions,
// simulated with race detection, against the reference evaluator.
func TestO4Regress(t *testing.T) {
	for _, tt := range o4Regressions {
		p, diags := lang.Check(tt.name+".te", []byte(tt.src), lang.Config{Defines: tt.defines})
		if diags.HasErrors() {
			t.Fatalf("%s: lang.Check:\n%v", tt.name, diags.Error())
		}
		in := feeds(p, 1)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, gpuName := range []string{"a100", "h100", "small"} {
			for _, det := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/det=%v", tt.name, gpuName, det), func(t *testing.T) {
					t.Parallel()
					g, _ := gpu.Builtin(gpuName)
					buildAndCompare(t, p, pipeline.Options{Level: 4, GPU: g, Deterministic: det}, in, want, tolModel)
				})
			}
		}
	}
}
