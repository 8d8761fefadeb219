// Package stdlib holds the .te standard library: linear algebra, convolution,
// pooling, normalisation, activations and layout functions, written in the
// language itself and shipped inside the binary. Every file's functions are
// visible in every program without an import.
package stdlib

import (
	"embed"
	"io/fs"
)

//go:embed *.te
var files embed.FS

// FS returns the standard library's source files, one .te file per topic.
func FS() fs.FS { return files }
