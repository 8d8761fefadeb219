// Package tokenizer reads Hugging Face tokenizer.json files and encodes
// text to token ids and ids back to text as the Rust tokenizers library
// does, for the BPE tokenizers of the generative models tec runs:
//
//   - byte-level BPE (Llama 3, Qwen2 and Qwen3, SmolLM2, GPT-2): every byte
//     of the text spelled as a character, the words split by a regular
//     expression;
//   - SentencePiece-style BPE with byte fallback (Llama 2, Mistral): "▁"
//     for spaces and before the text, characters the vocabulary lacks as
//     their <0xXX> byte tokens.
//
// Load or Parse reads a tokenizer.json; Encode and Decode convert, and a
// DecodeStream decodes ids one at a time as a model generates them,
// holding back a character whose bytes span several tokens. LoadConfig
// reads a tokenizer_config.json (its bos_token, eos_token and
// chat_template), and ParseChatTemplate recognises a chat template as
// Llama 3's or ChatML (Qwen, SmolLM2) by its markers and renders
// conversations in that format; it does not interpret Jinja.
//
// # What a tokenizer.json may hold
//
// The model must be BPE: its vocab and merges (as "a b" strings or as
// ["a", "b"] pairs), unk_token, fuse_unk, byte_fallback and ignore_merges;
// no dropout and no subword prefix or suffix. Added tokens are split out
// of the text before the model runs, special or not, the longest first,
// with their single_word, lstrip, rstrip and normalized options. The
// components supported are:
//
//   - normalizers: Sequence, Prepend, Replace (a string or a regular
//     expression), NFC;
//   - pre-tokenizers: Sequence, Split (a string or a regular expression,
//     with the behaviour Isolated, not inverted), ByteLevel (add_prefix_space,
//     and use_regex with GPT-2's expression), Digits;
//   - post-processors: Sequence, ByteLevel, TemplateProcessing (its
//     template for a single text, which is how Llama adds <|begin_of_text|>
//     or <s>);
//   - decoders: Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip.
//
// Anything else is an error naming it: an unknown model, normalizer,
// pre-tokenizer, post-processor or decoder type, an option of one that
// would change the ids (a Split that removes its matches, truncation,
// padding, dropout), an unknown field, and a file that contradicts itself
// (a merge of a token the vocabulary lacks, two tokens with one id, an
// added token whose id is another token's), rather than a tokenizer that
// encodes differently from the file's.
//
// Regular expressions are compiled with github.com/dlclark/regexp2, whose
// default syntax reads the patterns of tokenizer.json (lookahead, \p{L},
// \p{N}, inline case-insensitive groups) as Oniguruma, which Hugging Face
// uses, does; its \s is Unicode's White_Space, as Oniguruma's is (U+0085
// is a space, U+FEFF is not). As in Hugging Face's tokenizers, a character
// that neither the vocabulary, byte fallback nor an unknown token can
// encode is dropped. Text that is not valid UTF-8 is an error, as is an id
// without a token in Decode.
//
// # How it is tested
//
// The tests generate a corpus of 5,000 strings per tokenizer (words in
// every case, runs of spaces, tabs and newlines, digits of every length,
// punctuation, code, contractions, emoji with skin tones and joiners, CJK,
// Arabic, Devanagari, Cyrillic and other scripts, combining marks, rare
// characters, special tokens and near misses, the empty string) and
// compare the ids with independent implementations:
//
//   - Llama 3's tokenizer.json, with its real vocabulary and merges (built
//     from npm's llama3-tokenizer-js at test time), against
//     llama3-tokenizer-js's own encoder and against @huggingface/tokenizers,
//     the JavaScript port of Hugging Face's tokenizers; GPT-2's, SmolLM2's
//     and Qwen2's layouts over part of that vocabulary against
//     @huggingface/tokenizers;
//   - a small SentencePiece BPE model with byte fallback
//     (testdata/sp/bpe.model), converted to the layout of Llama 2's
//     tokenizer.json as Hugging Face's converter does, against SentencePiece
//     and @huggingface/tokenizers.
//
// Where a reference is known to part from the Rust library (JavaScript's
// \s in llama3-tokenizer-js and in @huggingface/tokenizers' ByteLevel
// expression, the latter's ASCII-only Digits), the texts concerned are
// left out of the comparison with it, and counted. Decoding is checked to
// give the text back, whole and streamed, and chat prompts against Jinja's
// rendering of templates of each family's shape.
package tokenizer
