package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tec/frontend/hf"
	"tec/generate"
	"tec/internal/safefile"
	"tec/te"
	"tec/tokenizer"
)

// Text generation. tec generate reads a prompt as text where it is not a
// file of token ids, and runs a Hugging Face checkpoint's directory as
// the model where it is given one: the program tec import DIR would
// write, its weights from the directory, the prompt encoded by the
// directory's tokenizer.json (with its chat template under --chat), P set
// to the prompt's tokens, the end-of-sequence ids of its config.json and
// generation_config.json, and the tokens decoded to text as they come.

// textGeneration is what a generation from a text prompt needs besides
// the models: the tokenizer, the prompt's ids, and the stop strings.
type textGeneration struct {
	dir   string // the checkpoint's directory
	tok   *tokenizer.Tokenizer
	ids   []int
	stops []string
}

// stringList is the value of a repeatable flag of strings (--stop).
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	if v == "" {
		return errors.New("an empty string")
	}
	*l = append(*l, v)
	return nil
}

// isCheckpoint reports whether path is a Hugging Face checkpoint's
// directory: a directory with a config.json.
func isCheckpoint(path string) bool {
	st, err := os.Stat(filepath.Join(path, hf.ConfigFile))
	return err == nil && st.Mode().IsRegular()
}

// isIDsFile reports whether --prompt names a file of token ids rather than
// being the text of the prompt: a name ending in .npy.
func isIDsFile(prompt string) bool { return strings.HasSuffix(prompt, ".npy") }

// checkpointSource returns the program of the checkpoint in dir, as tec
// import DIR writes it at its default sizes (-D changes them).
func checkpointSource(dir string) ([]byte, error) {
	c, err := hf.ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	b, p, t := hf.DefaultSizes(c)
	return hf.Program(c, hf.Options{B: b, P: p, T: t, Source: dir})
}

// prepareText encodes gf's text prompt with the tokenizer of the
// checkpoint dir (its chat template with --chat), sets the program's B to
// 1 and P to the prompt's tokens where -D does not, and, where --eos does
// not, the end-of-sequence ids to the checkpoint's.
func (gf *generateFlags) prepareText(dir string) (*textGeneration, error) {
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--prompt: %s has no tokenizer.json to encode the text with"+hintSep+"pass the prompt's token ids as an .npy file (--prompt ids.npy), or a checkpoint directory with its tokenizer", dir)
	}
	if err != nil {
		return nil, err
	}
	tg := &textGeneration{dir: dir, tok: tok, stops: gf.stops}
	var endOfTurn string
	if gf.chat {
		tpl, err := chatTemplate(dir)
		if err != nil {
			return nil, err
		}
		var msgs []tokenizer.Message
		if gf.system != "" {
			msgs = append(msgs, tokenizer.Message{Role: "system", Content: gf.system})
		}
		msgs = append(msgs, tokenizer.Message{Role: "user", Content: gf.prompt})
		text, err := tpl.Render(msgs, true)
		if err != nil {
			return nil, err
		}
		// The template writes the special tokens itself.
		if tg.ids, err = tok.Encode(text, false); err != nil {
			return nil, err
		}
		endOfTurn = tpl.EndOfTurn()
	} else if tg.ids, err = tok.Encode(gf.prompt, true); err != nil {
		return nil, err
	}
	if len(tg.ids) == 0 {
		return nil, errors.New("--prompt: the text encodes to no tokens" + hintSep + "give a prompt of at least one token")
	}
	for name, v := range map[string]int{"B": 1, "P": len(tg.ids)} {
		if _, ok := gf.defines[name]; !ok {
			gf.defines[name] = strconv.Itoa(v)
		}
	}
	if len(gf.eos) == 0 {
		eos, err := checkpointEOS(dir, tok)
		if err != nil {
			return nil, err
		}
		if id, ok := tok.TokenID(endOfTurn); ok && endOfTurn != "" && !slices.Contains(eos, id) {
			eos = append(eos, id)
		}
		gf.eos = eos
	}
	return tg, nil
}

// chatTemplate returns the chat template of the checkpoint in dir: from
// tokenizer_config.json, or chat_template.jinja beside it.
func chatTemplate(dir string) (*tokenizer.ChatTemplate, error) {
	cfg, err := tokenizer.LoadConfig(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, fmt.Errorf("--chat: %w", err)
	}
	src := cfg.ChatTemplate
	if src == "" {
		data, err := safefile.ReadFile(filepath.Join(dir, "chat_template.jinja"), maxSourceBytes)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--chat: %s gives no chat template (neither tokenizer_config.json's chat_template nor chat_template.jinja)"+hintSep+"leave --chat out to give the prompt as it is", dir)
		}
		if err != nil {
			return nil, fmt.Errorf("--chat: %w", err)
		}
		src = string(data)
	}
	tpl, err := tokenizer.ParseChatTemplate(src, cfg.BOSToken)
	if err != nil {
		return nil, fmt.Errorf("--chat: %w", err)
	}
	return tpl, nil
}

// checkpointEOS returns the end-of-sequence ids of the checkpoint in dir:
// config.json's, generation_config.json's, and the tokenizer's own.
func checkpointEOS(dir string, tok *tokenizer.Tokenizer) ([]int, error) {
	c, err := hf.ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	gen, err := hf.ReadGenerationEOS(dir)
	if err != nil {
		return nil, err
	}
	eos := slices.Clone(c.EOS)
	if id, ok := tok.EOS(); ok {
		eos = append(eos, id)
	}
	for _, id := range append(gen, eos...) {
		if !slices.Contains(eos, id) {
			eos = append(eos, id)
		}
	}
	slices.Sort(eos)
	return slices.Compact(eos), nil
}

// promptArray returns the prompt's ids as the prefill's ids input.
func (tg *textGeneration) promptArray(plan *generate.Plan) (*te.Array, error) {
	ids := plan.Prefill.Lookup(generate.IDs)
	a := te.NewArray(te.I32, ids.Shape)
	if len(a.Data) != len(tg.ids) {
		return nil, fmt.Errorf("--prompt: the text is %d tokens, but model %s's ids are %s"+hintSep+"leave -D B and -D P out: tec generate sets them to 1 and the prompt's tokens",
			len(tg.ids), plan.Prefill.Name, ids.TypeString())
	}
	for i, id := range tg.ids {
		a.Data[i] = float64(id)
	}
	return a, plan.CheckPrompt(a)
}

// shorten returns s, cut to n runes with an ellipsis where longer.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// textStream decodes a sequence's tokens to text as they come, holding
// back what may still become part of a stop string.
type textStream struct {
	tg    *textGeneration
	dec   *tokenizer.DecodeStream
	text  strings.Builder // all of it
	shown int             // bytes of text that no stop string can change
	out   io.Writer       // where they are written as they come, or nil
	// reported is the bytes of text that fresh has returned.
	reported int
	err      error
	stoppd   bool
}

func newTextStream(tg *textGeneration, out io.Writer) *textStream {
	return &textStream{tg: tg, dec: tg.tok.NewDecodeStream(true), out: out}
}

// add decodes token id, and reports whether the text now holds a stop
// string (the text is cut before it).
func (s *textStream) add(id int) bool {
	if s.stoppd || s.err != nil {
		return s.stoppd
	}
	piece, err := s.dec.Step(id)
	if err != nil {
		s.err = err
		return false
	}
	s.text.WriteString(piece)
	return s.check(false)
}

// check cuts the text at its first stop string, and writes to out what
// can no longer be the start of one (all of it at the end).
func (s *textStream) check(end bool) bool {
	text := s.text.String()
	cut := len(text)
	for _, stop := range s.tg.stops {
		if i := strings.Index(text, stop); i >= 0 && i < cut {
			cut, s.stoppd = i, true
		}
	}
	if s.stoppd {
		s.text.Reset()
		s.text.WriteString(text[:cut])
		end = true
	}
	safe := cut
	if !end {
		// the longest suffix that begins a stop string waits
		for _, stop := range s.tg.stops {
			for n := min(len(stop)-1, cut); n > 0; n-- {
				if strings.HasSuffix(text[:cut], stop[:n]) {
					safe = min(safe, cut-n)
					break
				}
			}
		}
	}
	if safe > s.shown {
		if s.out != nil {
			io.WriteString(s.out, text[s.shown:safe])
		}
		s.shown = safe
	}
	return s.stoppd
}

// fresh returns the text shown since its last call.
func (s *textStream) fresh() string {
	t := s.text.String()[s.reported:s.shown]
	s.reported = s.shown
	return t
}

// finish flushes the decoder and writes the rest of the text.
func (s *textStream) finish() (string, error) {
	if !s.stoppd && s.err == nil {
		rest, err := s.dec.Flush()
		if err != nil {
			s.err = err
		}
		s.text.WriteString(rest)
	}
	s.check(true)
	return s.text.String(), s.err
}
