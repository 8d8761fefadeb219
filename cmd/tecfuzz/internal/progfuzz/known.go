package progfuzz

// knownDefects are failure classes that have been reported and are not yet
// fixed, each matched by its exact signature (kind, level, GPU, message):
// a campaign counts them apart from new classes so that a long run goes on
// finding others, and the table names them. It is empty while every class
// found is fixed: issue 17's F1-F9 and the N1-N8 this fuzzer found are
// fixed, and each of their programs is a case of TestRegressions. The smoke
// test fails on any failure, known or not.
var knownDefects []struct {
	id, defect string
	match      func(src []byte, f Failure) bool
}

// knownDefect returns the id of the known defect f is an instance of, or "".
func knownDefect(src []byte, f Failure) string {
	for _, k := range knownDefects {
		if k.match(src, f) {
			return k.id
		}
	}
	return ""
}
