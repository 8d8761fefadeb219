package tokenizer

import (
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// The corpus of the reference tests: strings made of fragments of every
// kind that tokenizers treat differently, drawn by a seeded generator so
// that every run (and every reference) sees the same strings.

var (
	corpusWords = strings.Fields(`the of and to in is was for on that with as by at from it this be are
		have not or an but they which one you all were her she there would their we him been has when who will
		more no if out so said what up its about into than them can only other new some could time these two may
		then do first any my now such like our over man me even most made after also did many before must through
		back years where much your way well down should because each just those people how too little state good
		very make world still own see men work long get here between both life being under never day same another
		know while last might us great old year off come since against go came right used take three tokenizer
		llama merges vocabulary encoding decode compiler kernel tensor gradient inference transformer attention
		international unbelievable antidisestablishmentarianism pneumonoultramicroscopic Mississippi naïve café
		résumé façade coöperate jalapeño Zürich straße Ångström fiancée déjà`)
	corpusWhitespace = []string{" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", " \n", "\n ", " \n ",
		"\r\n", "\r", "  \t ", "\t \n", "\u00a0", "\u3000", "\u2003", "\u2009", " \u00a0 ", "\v", "\f", "        "}
	corpusPunct   = []rune(`.,;:!?-()[]{}"'` + "`" + `~@#$%^&*_+=<>/\|…–—“”‘’«»¿¡·•§¶©®™°±×÷`)
	corpusSnippet = []string{
		"func main() {\n\tfmt.Println(\"hello, world\")\n}\n",
		"if (x < 10 && y >= 3) { y += x * 2; }",
		"def f(a, b=2):\n    return a ** b  # power\n",
		"<div class=\"row\"><span>42</span></div>",
		"SELECT id, name FROM users WHERE age > 21 ORDER BY name;",
		"for i in range(100):\n\tprint(i)",
		"x := map[string]int{\"a\": 1, \"b\": 2}",
		"#include <stdio.h>\nint main(void) { return 0; }",
		"const re = /\\s+(?!\\S)/gu;",
		"{\"key\": [1, 2.5, -3e10, null, true]}",
		"$ go test ./... -run 'Layer|Arch' -count=1",
		"https://example.com/path?q=1&r=%20x#frag",
		"user@example.org",
		"    indented    code\t\twith\ttabs",
		"a+b=c; a-b=d; a*b=e; a/b=f; a%b=g; a^b=h",
		"[[1,2],[3,4]] @ [[5],[6]]",
	}
	corpusContractions = []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M",
		"'LL", "'D", "'Re", "'lL", "don't", "I'm", "we'll", "they've", "she'd", "it's", "YOU'RE", "can't", "o'clock",
		"rock'n'roll", "''", "'", "' s", "'x"}
	corpusEmoji = []string{"🦙", "😀", "👍", "👍🏽", "👋🏿", "❤️", "❤", "🇯🇵", "🇺🇸", "🏳️‍🌈", "👨‍👩‍👧‍👦", "🧑🏾‍💻",
		"👩‍❤️‍💋‍👨", "🤷‍♀️", "🫠", "🥲", "✨", "🔥🔥🔥", "©️", "1️⃣", "#️⃣"}
	corpusScripts = []string{"日本語のテキストです", "中文字符和标点。", "한국어 문장입니다", "Привет, мир!", "Съешь же ещё этих мягких французских булок",
		"Καλημέρα κόσμε", "مرحبا بالعالم", "السلام عليكم ورحمة الله", "नमस्ते दुनिया", "हिन्दी में लिखा गया वाक्य", "שלום עולם",
		"สวัสดีชาวโลก", "Tiếng Việt có dấu", "ქართული ენა", "Հայերեն", "ᚠᛇᚻ᛫ᛒᛦᚦ", "ꦱꦸꦒꦼꦁ", "𐌰𐌱𐌲", "ʻōlelo Hawaiʻi"}
	corpusCombining = []string{"e\u0301", "a\u0308\u0323", "n\u0303", "o\u0302\u0300", "A\u030a", "\u212b", "\u1e9b\u0323",
		"\u0041\u0301\u0302\u0303\u0304", "z\u0335\u0336", "\u0915\u094d\u0937", "\uac00\u11a8", "\u1100\u1161\u11a8", "ﬁ", "ｶﾀｶﾅ", "①②③", "²³", "ǅ"}
)

// rareRunes are code points far from any small vocabulary (byte fallback)
// or split into several byte-level tokens.
var rareRanges = [][2]rune{
	{0x0250, 0x02af}, {0x0370, 0x03ff}, {0x0530, 0x058f}, {0x10a0, 0x10ff}, {0x1d00, 0x1d7f}, {0x2190, 0x21ff},
	{0x2200, 0x22ff}, {0x2500, 0x257f}, {0x2600, 0x26ff}, {0x2800, 0x28ff}, {0x3040, 0x30ff}, {0x4e00, 0x9fff},
	{0xa000, 0xa48c}, {0xac00, 0xd7a3}, {0xe000, 0xe0ff}, {0xfb50, 0xfbb1}, {0x10300, 0x1031f}, {0x1d400, 0x1d4ff},
	{0x1f300, 0x1f5ff}, {0x1f900, 0x1f9ff}, {0x20000, 0x2a6df},
}

// corpus returns n strings from the generator seeded with seed, the empty
// string first; specials are strings to embed now and then (the added
// tokens of the tokenizer under test).
func corpus(seed uint64, n int, specials []string) []string {
	r := rand.New(rand.NewPCG(seed, 0x70c3))
	out := []string{""}
	for len(out) < n {
		var sb strings.Builder
		if r.IntN(10) == 0 {
			sb.WriteString(pick(r, corpusWhitespace))
		}
		for k := 1 + r.IntN(8); k > 0; k-- {
			fragment(r, &sb, specials)
		}
		if r.IntN(10) == 0 {
			sb.WriteString(pick(r, corpusWhitespace))
		}
		out = append(out, sb.String())
	}
	return out
}

func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

// fragment writes one piece of some kind to sb, with a separator most of
// the time.
func fragment(r *rand.Rand, sb *strings.Builder, specials []string) {
	switch k := r.IntN(100); {
	case k < 30: // words, in some case
		for w := 1 + r.IntN(6); w > 0; w-- {
			word := pick(r, corpusWords)
			switch r.IntN(8) {
			case 0:
				word = strings.ToUpper(word)
			case 1, 2:
				_, size := utf8.DecodeRuneInString(word)
				word = strings.ToUpper(word[:size]) + word[size:]
			case 3:
				var b strings.Builder
				for i := 1 + r.IntN(12); i > 0; i-- {
					b.WriteByte(byte('a' + r.IntN(26)))
				}
				word = b.String()
			}
			sb.WriteString(word)
			if w > 1 {
				sb.WriteByte(' ')
			}
		}
	case k < 38:
		sb.WriteString(pick(r, corpusWhitespace))
	case k < 46: // digit runs of every length
		for i := 1 + r.IntN(12); i > 0; i-- {
			sb.WriteByte(byte('0' + r.IntN(10)))
		}
		if r.IntN(3) == 0 {
			sb.WriteString(pick(r, []string{".", ",", "%", "px", "e-3", " km", ":"}))
		}
	case k < 53:
		for i := 1 + r.IntN(4); i > 0; i-- {
			sb.WriteRune(pick(r, corpusPunct))
		}
	case k < 59:
		sb.WriteString(pick(r, corpusSnippet))
	case k < 65:
		if r.IntN(2) == 0 {
			sb.WriteString(pick(r, corpusWords))
		}
		sb.WriteString(pick(r, corpusContractions))
	case k < 71:
		sb.WriteString(pick(r, corpusEmoji))
	case k < 79:
		sb.WriteString(pick(r, corpusScripts))
	case k < 84:
		sb.WriteString(pick(r, corpusCombining))
	case k < 90:
		for i := 1 + r.IntN(3); i > 0; i-- {
			rg := pick(r, rareRanges)
			sb.WriteRune(rg[0] + rune(r.IntN(int(rg[1]-rg[0]+1))))
		}
	case k < 95:
		if len(specials) > 0 {
			s := pick(r, specials)
			switch r.IntN(6) {
			case 0: // a near miss
				s = s[:len(s)-1]
			case 1:
				s = s + s
			}
			sb.WriteString(s)
		}
	default:
		sb.WriteString(pick(r, []string{"\u00ad", "\u200b", "\u200d", "\ufeff", "\u0085", "\x1b[0m", "\x07", "\u2028", "\u061c", "\U000e0041", "\ufffd", "\x7f"}))
	}
	if r.IntN(3) > 0 {
		sb.WriteString(pick(r, []string{" ", " ", " ", "\n", ", ", ". ", "  ", "\t"}))
	}
}
