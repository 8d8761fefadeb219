package lsp

import (
	"fmt"
	"testing"

	"tec/internal/longprog"
)

// BenchmarkLongSum measures the time from opening a file whose model is
// y = x + x + ... of 25,000 to 100,000 terms to its first diagnostics, and
// then its document symbols.
func BenchmarkLongSum(b *testing.B) {
	for _, n := range []int{25000, 50000, 100000} {
		src, err := longprog.Generate(longprog.Sum, n)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				c, u := benchSession(b, src)
				params := map[string]any{"textDocument": map[string]any{"uri": u}}
				if _, err := c.call("textDocument/documentSymbol", params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
