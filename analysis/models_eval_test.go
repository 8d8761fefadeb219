package analysis

import (
	"testing"

	"tec/te"
)

// TestModelsEvaluate runs the Go-built models at tiny sizes through the
// reference evaluator, to check that they are well-formed programs (every
// load in bounds).
func TestModelsEvaluate(t *testing.T) {
	progs := map[string]*te.Program{
		"bert":       bert(2, 8, 16, 2, 32),
		"lstm":       lstm(3, 2, 8, false),
		"lstm gates": lstm(3, 2, 8, true),
		"resnext":    resnext([]int{1, 1}, 16),
		"swin":       swin([]int{2, 2}, []int{2, 4}, 8, 32, 4, 4),
	}
	for name, p := range progs {
		if _, err := te.Evaluate(p, iotaFeeds(p, nil, 3), te.EvalOptions{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := Analyze(p, Options{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
