package main

import (
	"regexp"
	"strings"
	"testing"
)

// helpFlags returns the flags that "tec CMD -h" lists.
func helpFlags(t *testing.T, cmd string) map[string]bool {
	t.Helper()
	code, help, _ := runTec(t, cmd, "-h")
	if code != exitOK {
		t.Fatalf("tec %s -h: status %d", cmd, code)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -(\w+)`).FindAllStringSubmatch(help, -1) {
		flags[m[1]] = true
	}
	return flags
}

// TestHelpListsAcceptedFlags checks each command's help against the flags
// it refuses (refusedFlags): the help leaves each out, and the command
// refuses it with the reason as a usage error. tec help generate used to
// list -model, which tec generate then refused.
func TestHelpListsAcceptedFlags(t *testing.T) {
	for _, c := range commands() {
		flags := helpFlags(t, c.name)
		if len(flags) == 0 {
			t.Errorf("tec %s -h lists no flags", c.name)
		}
		for name, why := range refusedFlags[c.name] {
			if flags[name] {
				t.Errorf("tec %s -h lists -%s, which tec %s refuses", c.name, name, c.name)
			}
			code, _, stderr := runTec(t, c.name, "-"+name, "x", "testdata/softmax.te")
			msg, _ := splitHint(why)
			if code != exitUsage || !strings.Contains(stderr, msg) {
				t.Errorf("tec %s -%s x: status %d, stderr:\n%s\nwant status %d and %q", c.name, name, code, stderr, exitUsage, msg)
			}
		}
	}
	// The compile flags are the group that refusedFlags trims: every other
	// command that compiles one model lists -model.
	for _, cmd := range []string{"check", "build", "te", "run", "explain", "graph"} {
		if !helpFlags(t, cmd)["model"] {
			t.Errorf("tec %s -h does not list -model", cmd)
		}
	}
}
