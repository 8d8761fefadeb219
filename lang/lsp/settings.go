package lsp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"go.lsp.dev/protocol"
)

// settings are the workspace settings the server reads, under "tec" in the
// client's configuration:
//
//	"tec.defines": {"N": "16", "D": "64"}     (or ["N=16", "D=64"])
//
// The defines override top-level constants, as -D does on the command line,
// in every file that declares them.
type settings struct {
	defines map[string]string
	gen     int // bumped on every change, so that cached checks are redone
}

// parseSettings reads settings from the JSON the client sent as
// initializationOptions or in workspace/didChangeConfiguration. Both
// {"tec": {"defines": ...}} and {"defines": ...} are accepted, and so is
// {"tec.defines": ...}.
func parseSettings(raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf(`the settings must be an object ({"tec": {"defines": {...}}}), got %s`, jsonValueKind(raw))
	}
	if inner, ok := top["tec"]; ok {
		var t map[string]json.RawMessage
		if err := json.Unmarshal(inner, &t); err != nil {
			return nil, fmt.Errorf(`the setting tec must be an object ({"defines": {...}}), got %s`, jsonValueKind(inner))
		}
		top = t
	} else if d, ok := top["tec.defines"]; ok {
		top = map[string]json.RawMessage{"defines": d}
	}
	d, ok := top["defines"]
	if !ok || string(d) == "null" {
		return nil, nil
	}
	return parseDefines(d)
}

// parseDefines reads defines as an object of NAME to value (a string or a
// number) or as a list of "NAME=VALUE" strings.
func parseDefines(raw json.RawMessage) (map[string]string, error) {
	out := map[string]string{}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err == nil {
		for k, v := range obj {
			switch v := v.(type) {
			case string:
				out[k] = v
			case float64:
				out[k] = fmt.Sprint(v)
			default:
				return nil, fmt.Errorf("tec.defines: the value of %s must be a number or a string", k)
			}
		}
		return out, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("tec.defines: want an object of NAME: VALUE or a list of \"NAME=VALUE\"")
	}
	for _, s := range list {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("tec.defines: want NAME=VALUE, got %q", s)
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return out, nil
}

// setSettings applies new settings and rechecks the open documents.
func (s *server) setSettings(raw json.RawMessage) {
	defines, err := parseSettings(raw)
	if err != nil {
		s.logf("%v", err)
		s.showMessage(err.Error())
		return
	}
	s.mu.Lock()
	changed := !maps.Equal(defines, s.settings.defines)
	if changed {
		s.settings = settings{defines: defines, gen: s.settings.gen + 1}
	}
	var uris []string
	for u := range s.docs {
		uris = append(uris, string(u))
	}
	s.mu.Unlock()
	if changed {
		for _, u := range uris {
			s.scheduleCheck(protocol.DocumentURI(u))
		}
	}
}

// jsonValueKind describes a valid JSON value by its kind, for messages: "an
// array", "a string", "7".
func jsonValueKind(raw json.RawMessage) string {
	switch k := jsonKind(bytes.TrimSpace(raw)); k {
	case "batch":
		return "an array"
	case "object":
		return "an object"
	case "number":
		return string(bytes.TrimSpace(raw))
	default:
		return "a " + k
	}
}
