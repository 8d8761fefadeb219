package precision_test

import (
	"os"
	"testing"

	"tec/internal/testkit/testmem"
)

// TestMain holds the package's tests to the suite's memory budget
// (package testmem).
func TestMain(m *testing.M) { os.Exit(testmem.Main(m)) }
