package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The chat templates of the tests, written for them in the shapes of the
// families' templates: Llama 3's (one header block per message), Llama
// 3.1's (the system block first, dated, its date a default) and 3.2's
// (dated today), and ChatML's, with a default system message as Qwen2.5
// and SmolLM2 give one, and without.
var chatTemplates = map[string]string{
	"llama3": `{{- bos_token -}}
{%- for m in messages -%}
{{- '<|start_header_id|>' ~ m.role ~ '<|end_header_id|>\n\n' ~ (m.content | trim) ~ '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}{%- endif -%}`,
	"llama3.1": `{{- bos_token }}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}

{#- The system message goes in the first block. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}

{%- for message in messages %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
`,
	"llama3.2": `{{- bos_token }}
{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
`,
	"chatml default system": `{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- else %}
    {{- '<|im_start|>system\nYou are a helpful assistant made for tests.<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "user" or (message.role == "system" and not loop.first) or message.role == "assistant" %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
`,
	"chatml first": `{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "<|im_start|>system\nYou are a small model, for \"tests\".<|im_end|>\n" }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`,
	"chatml":       `{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`,
}

// chatConversations are the conversations the templates render.
var chatConversations = [][]Message{
	{{"system", "You are a compiler."}, {"user", "What is 2 + 2?"}},
	{{"user", "Hello!"}},
	{{"system", "  Be brief.\n"}, {"user", "\tHi there\n\n"}, {"assistant", " Hello. "}, {"user", "Tell me a\nstory with {{ braces }} and 'quotes'."}},
	{{"user", "One"}, {"assistant", "Two"}, {"user", "Three"}},
	{{"system", ""}, {"user", "   "}},
}

// today is the date of the tests' strftime_now.
var today = time.Date(2025, time.March, 5, 12, 0, 0, 0, time.UTC)

// TestChatTemplateRender checks the prompts of a system and a user
// message against those the families' templates give (as written out by
// hand from their source).
func TestChatTemplateRender(t *testing.T) {
	msgs := []Message{{"system", "You are a compiler."}, {"user", "What is 2 + 2?"}}
	tests := []struct {
		template string
		msgs     []Message
		want     string
	}{
		{"llama3", msgs, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a compiler.<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nWhat is 2 + 2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3.1", msgs, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n" +
			"Today Date: 26 Jul 2024\n\nYou are a compiler.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2 + 2?<|eot_id|>" +
			"<|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3.2", msgs[1:], "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n" +
			"Today Date: 05 Mar 2025\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2 + 2?<|eot_id|>" +
			"<|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"chatml default system", msgs, "<|im_start|>system\nYou are a compiler.<|im_end|>\n<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"},
		{"chatml default system", msgs[1:], "<|im_start|>system\nYou are a helpful assistant made for tests.<|im_end|>\n<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"},
		{"chatml first", msgs[1:], "<|im_start|>system\nYou are a small model, for \"tests\".<|im_end|>\n<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"},
		{"chatml", msgs[1:], "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"},
	}
	for _, tt := range tests {
		c, err := ParseChatTemplate(chatTemplates[tt.template], "<|begin_of_text|>")
		if err != nil {
			t.Fatalf("%s: %v", tt.template, err)
		}
		c.Now = func() time.Time { return today }
		got, err := c.Render(tt.msgs, true)
		if err != nil {
			t.Fatalf("%s: %v", tt.template, err)
		}
		if got != tt.want {
			t.Errorf("%s: Render(%q) =\n%q, want\n%q", tt.template, tt.msgs, got, tt.want)
		}
	}
}

// TestChatTemplateAgainstJinja renders every conversation with every
// template, with and without the generation prompt, and compares with
// Jinja's rendering of the templates (Debian's python3-jinja2), set up as
// Hugging Face's apply_chat_template sets it up.
func TestChatTemplateAgainstJinja(t *testing.T) {
	t.Parallel()
	requirePython(t, "jinja2", "python3-jinja2")
	type jinjaCase struct {
		Template            string    `json:"template"`
		BOSToken            string    `json:"bos_token"`
		Messages            []Message `json:"messages"`
		AddGenerationPrompt bool      `json:"add_generation_prompt"`
	}
	var cases []jinjaCase
	var got, names []string
	for name, src := range chatTemplates {
		c, err := ParseChatTemplate(src, "<|begin_of_text|>")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.Now = func() time.Time { return today }
		for _, msgs := range chatConversations {
			for _, gen := range []bool{true, false} {
				s, err := c.Render(msgs, gen)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got = append(got, s)
				names = append(names, name)
				cases = append(cases, jinjaCase{src, "<|begin_of_text|>", msgs, gen})
			}
		}
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	writeJSON(t, in, map[string]any{"today": today.Format("2006-01-02"), "cases": cases})
	run(t, python, "chat.py", in, out)
	var want []string
	readJSON(t, out, &want)
	for i := range cases {
		if got[i] != want[i] {
			t.Errorf("%s, %q, generation prompt %v:\n got %q\nwant %q", names[i], cases[i].Messages, cases[i].AddGenerationPrompt, got[i], want[i])
		}
	}
	t.Logf("%d renderings as Jinja renders them", len(cases))
}

func TestChatTemplateErrors(t *testing.T) {
	for _, tt := range []struct{ src, bos, want string }{
		{"{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}{% endfor %}", "<s>",
			`chat template not supported (neither Llama 3's <|start_header_id|> nor ChatML's <|im_start|>): "{{ bos_token }}{% for message in messages %}{% if message['r..."`},
		{"<start_of_turn>user\n{{ messages[0]['content'] }}<end_of_turn>", "", "chat template not supported"},
		{"<|im_start|><|im_end|><|start_header_id|><|end_header_id|><|eot_id|>", "", "both Llama 3's and ChatML's markers"},
		{chatTemplates["llama3"], "", "writes bos_token, but the configuration has none"},
		{strings.ReplaceAll(chatTemplates["llama3.1"], `"26 Jul 2024"`, "today"), "<|begin_of_text|>", "sets no date_string"},
		{strings.ReplaceAll(chatTemplates["llama3.1"], `"Today Date: "`, `"Date: "`), "<|begin_of_text|>", `no "Today Date: "`},
	} {
		_, err := ParseChatTemplate(tt.src, tt.bos)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseChatTemplate(%.40q): error %v, want one containing %q", tt.src, err, tt.want)
		}
	}
	c, err := ParseChatTemplate(chatTemplates["chatml"], "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Format() != ChatML || c.Format().String() != "ChatML" {
		t.Errorf("Format() = %v, want ChatML", c.Format())
	}
	if _, err := c.Render(nil, true); err == nil {
		t.Error("Render of no messages: no error")
	}
	if _, err := c.Render([]Message{{"tool", "{}"}}, true); err == nil || !strings.Contains(err.Error(), `role "tool"`) {
		t.Errorf("Render of a tool message: error %v", err)
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name, json string
		want       Config
		err        string
	}{
		{"strings", `{"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "chat_template": "{{ x }}", "model_max_length": 131072}`,
			Config{BOSToken: "<|begin_of_text|>", EOSToken: "<|eot_id|>", ChatTemplate: "{{ x }}"}, ""},
		{"token objects", `{"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false}, "eos_token": {"content": "</s>"}, "chat_template": null}`,
			Config{BOSToken: "<s>", EOSToken: "</s>"}, ""},
		{"null tokens", `{"bos_token": null, "eos_token": "<|im_end|>"}`, Config{EOSToken: "<|im_end|>"}, ""},
		{"named templates", `{"chat_template": [{"name": "tool_use", "template": "a"}, {"name": "default", "template": "b"}]}`, Config{ChatTemplate: "b"}, ""},
		{"no default template", `{"chat_template": [{"name": "tool_use", "template": "a"}]}`, Config{}, `no template named default among ["tool_use"]`},
		{"bad token", `{"eos_token": 3}`, Config{}, "eos_token: want a string or an object"},
		{"bad template", `{"chat_template": {"x": 1}}`, Config{}, "chat_template: want a string or a list"},
		{"not JSON", `{`, Config{}, "tokenizer: "},
	}
	for _, tt := range tests {
		c, err := ParseConfig([]byte(tt.json))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if *c != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, *c, tt.want)
		}
	}
}
