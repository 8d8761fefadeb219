package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is what tec reads of a tokenizer_config.json: the names of the
// beginning- and end-of-sequence tokens and the chat template. The rest of
// the file (padding, the model's maximum length, the Python class) does
// not change how text is encoded.
type Config struct {
	BOSToken string // "" if the file gives none
	EOSToken string // "" if the file gives none
	// ChatTemplate is the source of the default chat template (a Jinja
	// template; see ParseChatTemplate), "" if the file has none. Newer
	// checkpoints keep it in chat_template.jinja beside the file instead.
	ChatTemplate string
}

// LoadConfig reads the tokenizer_config.json file at path.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	c, err := parseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig reads the contents of a tokenizer_config.json file. A token
// may be given as a string or as an added-token object ({"content": ...});
// the chat template as a string or as a list of named templates, of which
// the one named "default" is taken.
func ParseConfig(data []byte) (*Config, error) {
	c, err := parseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return c, nil
}

func parseConfig(data []byte) (*Config, error) {
	var v struct {
		BOSToken     json.RawMessage `json:"bos_token"`
		EOSToken     json.RawMessage `json:"eos_token"`
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	c := &Config{}
	var err error
	if c.BOSToken, err = configToken(v.BOSToken); err != nil {
		return nil, fmt.Errorf("bos_token: %w", err)
	}
	if c.EOSToken, err = configToken(v.EOSToken); err != nil {
		return nil, fmt.Errorf("eos_token: %w", err)
	}
	if c.ChatTemplate, err = configTemplate(v.ChatTemplate); err != nil {
		return nil, fmt.Errorf("chat_template: %w", err)
	}
	return c, nil
}

// configToken reads a token given as a string, an object with "content",
// or null.
func configToken(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var o struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.Content == nil {
		return "", fmt.Errorf("want a string or an object with content, have %s", truncate(string(raw)))
	}
	return *o.Content, nil
}

// configTemplate reads a chat template given as a string, a list of
// {"name", "template"} (the "default" one taken), or null.
func configTemplate(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", fmt.Errorf("want a string or a list of named templates, have %s", truncate(string(raw)))
	}
	var names []string
	for _, t := range list {
		if t.Name == "default" {
			return t.Template, nil
		}
		names = append(names, t.Name)
	}
	return "", fmt.Errorf("no template named default among %q", names)
}
