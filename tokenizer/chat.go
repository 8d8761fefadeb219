package tokenizer

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// A Message is a turn of a conversation (in JSON as in Hugging Face's
// chat templates: {"role": ..., "content": ...}).
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// ChatFormat is a family of chat templates.
type ChatFormat int

// The chat formats recognised.
const (
	// Llama3 is Meta's format: <|begin_of_text|>, then each message as
	// <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>. From
	// Llama 3.1 on, the system block always comes first and starts with
	// the knowledge cutoff and the date.
	Llama3 ChatFormat = iota + 1
	// ChatML is the format of Qwen and SmolLM: each message as
	// <|im_start|>ROLE\nCONTENT<|im_end|>\n, with the model's default
	// system message when the conversation starts without one.
	ChatML
)

// String returns the format's name.
func (f ChatFormat) String() string {
	switch f {
	case Llama3:
		return "Llama 3"
	case ChatML:
		return "ChatML"
	}
	return "ChatFormat(" + strconv.Itoa(int(f)) + ")"
}

// A ChatTemplate renders conversations as a model's chat template does.
// It is not a Jinja interpreter: ParseChatTemplate recognises a template's
// format by its markers and reads the few literals that vary between
// models (a default system message, Llama 3.1's knowledge cutoff and
// default date), and Render writes the format for conversations of system,
// user and assistant messages without tool calls.
type ChatTemplate struct {
	// Now is the clock of a template that dates its system block with
	// today's date (Llama 3.2's strftime_now); nil means time.Now.
	Now func() time.Time

	format        ChatFormat
	bos           string // text before everything, "" for none
	trim          bool   // contents are stripped of surrounding whitespace
	defaultSystem string // ChatML: the system message when there is none
	cutoff        string // Llama 3.1: the system block's first line(s), "" if undated
	date          string // Llama 3.1: the date, when not today's
	today         bool   // Llama 3.2: the date is today's
}

// Format returns the template's format.
func (c *ChatTemplate) Format() ChatFormat { return c.format }

// EndOfTurn returns the special token that ends a message in the
// template's format, at which a chat model's reply ends: Llama 3's
// <|eot_id|>, ChatML's <|im_end|>.
func (c *ChatTemplate) EndOfTurn() string {
	if c.format == ChatML {
		return "<|im_end|>"
	}
	return "<|eot_id|>"
}

// ParseChatTemplate recognises the chat template src (a Jinja template from
// tokenizer_config.json). bosToken is the configuration's bos_token, which
// Llama 3's templates write first. A template of neither supported format
// is an error quoting its start.
func ParseChatTemplate(src, bosToken string) (*ChatTemplate, error) {
	llama := strings.Contains(src, "<|start_header_id|>") && strings.Contains(src, "<|end_header_id|>") && strings.Contains(src, "<|eot_id|>")
	chatml := strings.Contains(src, "<|im_start|>") && strings.Contains(src, "<|im_end|>")
	c := &ChatTemplate{}
	switch {
	case llama && chatml:
		return nil, fmt.Errorf("tokenizer: chat template has both Llama 3's and ChatML's markers: %q", truncate(src))
	case llama:
		c.format = Llama3
	case chatml:
		c.format = ChatML
	default:
		return nil, fmt.Errorf("tokenizer: chat template not supported (neither Llama 3's <|start_header_id|> nor ChatML's <|im_start|>): %q", truncate(src))
	}
	if strings.Contains(src, "bos_token") {
		if bosToken == "" {
			return nil, fmt.Errorf("tokenizer: chat template writes bos_token, but the configuration has none")
		}
		c.bos = bosToken
	} else if c.format == Llama3 && strings.Contains(src, "<|begin_of_text|>") {
		c.bos = "<|begin_of_text|>"
	}
	c.trim = trimFilter.MatchString(src)
	lits := jinjaLiterals(src)
	switch c.format {
	case ChatML:
		for _, l := range lits {
			if s, ok := strings.CutPrefix(l, "<|im_start|>system\n"); ok {
				if s, ok := strings.CutSuffix(s, "<|im_end|>\n"); ok {
					c.defaultSystem = s
					break
				}
			}
		}
	case Llama3:
		for _, l := range lits {
			if strings.HasPrefix(l, "Cutting Knowledge Date:") {
				c.cutoff = l
				break
			}
		}
		if c.cutoff == "" {
			break
		}
		if !containsString(lits, "Today Date: ") {
			return nil, fmt.Errorf("tokenizer: chat template has %q but no \"Today Date: \"", c.cutoff)
		}
		if m := dateDefault.FindStringSubmatch(src); m != nil {
			if l := jinjaLiterals("{{" + m[1] + "}}"); len(l) == 1 {
				c.date = l[0]
			}
		}
		c.today = strings.Contains(src, "strftime_now")
		if c.date == "" && !c.today {
			return nil, fmt.Errorf("tokenizer: chat template has %q but sets no date_string", c.cutoff)
		}
	}
	return c, nil
}

var (
	// trimFilter finds a message's content through Jinja's trim filter:
	// message['content'] | trim, m.content|trim.
	trimFilter = regexp.MustCompile(`content(?:'\]|"\])?\s*\|\s*trim\b`)
	// dateDefault finds Llama 3.1's default date: set date_string = "...".
	dateDefault = regexp.MustCompile(`set\s+date_string\s*=\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')`)
)

func containsString(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// Render returns the prompt of the conversation msgs: the messages in the
// template's format and, with addGenerationPrompt, the header of the
// assistant's reply. It holds the special tokens as text (Llama 3's
// beginning of text among them), to be encoded with addSpecial false.
func (c *ChatTemplate) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	if len(msgs) == 0 {
		return "", fmt.Errorf("tokenizer: chat template: no messages")
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return "", fmt.Errorf("tokenizer: chat template: message %d: role %q not supported (system, user, assistant)", i, m.Role)
		}
	}
	var sb strings.Builder
	sb.WriteString(c.bos)
	content := func(s string) string {
		if c.trim {
			return strings.TrimFunc(s, isPythonSpace)
		}
		return s
	}
	switch c.format {
	case Llama3:
		if c.cutoff != "" {
			system := ""
			if msgs[0].Role == "system" {
				system = content(msgs[0].Content)
				msgs = msgs[1:]
			}
			date := c.date
			if c.today {
				now := time.Now
				if c.Now != nil {
					now = c.Now
				}
				date = now().Format("02 Jan 2006")
			}
			sb.WriteString("<|start_header_id|>system<|end_header_id|>\n\n" + c.cutoff + "Today Date: " + date + "\n\n" + system + "<|eot_id|>")
		}
		for _, m := range msgs {
			sb.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + content(m.Content) + "<|eot_id|>")
		}
		if addGenerationPrompt {
			sb.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
		}
	case ChatML:
		if msgs[0].Role != "system" && c.defaultSystem != "" {
			sb.WriteString("<|im_start|>system\n" + c.defaultSystem + "<|im_end|>\n")
		}
		for _, m := range msgs {
			sb.WriteString("<|im_start|>" + m.Role + "\n" + content(m.Content) + "<|im_end|>\n")
		}
		if addGenerationPrompt {
			sb.WriteString("<|im_start|>assistant\n")
		}
	}
	return sb.String(), nil
}

// isPythonSpace is Python's str.isspace for one character, which Jinja's
// trim strips: Unicode's White_Space and the separators U+001C to U+001F.
func isPythonSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1C && r <= 0x1F }

// jinjaLiterals returns the values of the string literals inside the Jinja
// tags ({{ }} and {% %}) of src, escapes decoded as Python decodes them.
func jinjaLiterals(src string) []string {
	var out []string
	for i := 0; i < len(src)-1; i++ {
		if src[i] != '{' || src[i+1] != '{' && src[i+1] != '%' {
			continue
		}
		closer := "}}"
		if src[i+1] == '%' {
			closer = "%}"
		}
		j := i + 2
		for j < len(src) && !strings.HasPrefix(src[j:], closer) {
			q := src[j]
			if q != '\'' && q != '"' {
				j++
				continue
			}
			var sb strings.Builder
			k := j + 1
			for k < len(src) && src[k] != q {
				if src[k] == '\\' && k+1 < len(src) {
					k += decodeEscape(src[k:], &sb)
					continue
				}
				sb.WriteByte(src[k])
				k++
			}
			out = append(out, sb.String())
			j = k + 1
		}
		i = j
	}
	return out
}

// decodeEscape writes the value of the backslash escape at the start of s
// and returns its length. An escape Python does not know stays as written.
func decodeEscape(s string, sb *strings.Builder) int {
	switch s[1] {
	case 'n':
		sb.WriteByte('\n')
	case 't':
		sb.WriteByte('\t')
	case 'r':
		sb.WriteByte('\r')
	case '\\', '\'', '"':
		sb.WriteByte(s[1])
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[1]]
		if len(s) >= 2+n {
			if v, err := strconv.ParseUint(s[2:2+n], 16, 32); err == nil {
				sb.WriteRune(rune(v))
				return 2 + n
			}
		}
		sb.WriteString(s[:2])
	default:
		sb.WriteString(s[:2])
	}
	return 2
}
