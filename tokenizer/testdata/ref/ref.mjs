// The JavaScript references of tec's tokenizer tests (tokenizer/ref_test.go).
//
//   node ref.mjs llama3 DIR
//       reads DIR/in.json, {"texts": [...], "variant_texts": n}, and writes
//       DIR/llama3.json, Llama 3's tokenizer.json in the layout of Meta's
//       file, built from the vocabulary and merges that llama3-tokenizer-js
//       carries; DIR/VARIANT.json for the variants below, the GPT-2, SmolLM2
//       and Qwen2 layouts over the first merges of that vocabulary; and
//       DIR/out.json with, for each tokenizer, the ids of the texts (the
//       first n for the variants) from @huggingface/tokenizers and, for
//       llama3, from llama3-tokenizer-js too.
//   node ref.mjs encode TOKENIZER.json IN.json OUT.json
//       OUT.json gets @huggingface/tokenizers' ids of IN.json's texts.
//
// For each tokenizer, out.json holds "hf" (ids without special tokens),
// "hf_special" (with them, for the first special_texts texts) and
// "hf_decoded" (the decoding of the "hf" ids).
import fs from "node:fs";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";

const [cmd, ...args] = process.argv.slice(2);
// llama3-tokenizer-js takes a while to load: only the llama3 command does.
const llama3Tokenizer = cmd === "llama3" ? (await import("llama3-tokenizer-js")).default : null;

const SPECIAL_TEXTS = 500;

const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const byteLevel = (add_prefix_space, use_regex) => ({ type: "ByteLevel", add_prefix_space, trim_offsets: true, use_regex });

function addedToken(id, content) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

function bpe(vocab, merges, ignore_merges) {
  return {
    type: "BPE",
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges,
    vocab,
    merges,
  };
}

// The merges of llama3-tokenizer-js's map, keyed "left right", in order of
// rank.
const MERGES = llama3Tokenizer ? [...llama3Tokenizer.merges.keys()] : null;

function llama3Json() {
  const byId = llama3Tokenizer.vocabById;
  const vocab = {};
  const added = [];
  for (let id = 0; id < byId.length; id++) {
    if (id < 128000) {
      vocab[byId[id]] = id;
    } else {
      added.push(addedToken(id, byId[id]));
    }
  }
  const bos = byId[128000];
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: LLAMA3_PATTERN }, behavior: "Isolated", invert: false },
        byteLevel(false, false),
      ],
    },
    post_processor: {
      type: "Sequence",
      processors: [
        { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
        {
          type: "TemplateProcessing",
          single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
          pair: [
            { SpecialToken: { id: bos, type_id: 0 } },
            { Sequence: { id: "A", type_id: 0 } },
            { SpecialToken: { id: bos, type_id: 1 } },
            { Sequence: { id: "B", type_id: 1 } },
          ],
          special_tokens: { [bos]: { id: bos, ids: [128000], tokens: [bos] } },
        },
      ],
    },
    decoder: byteLevel(true, true),
    model: bpe(vocab, MERGES, true),
  };
}

// variantJson returns a tokenizer of the given layout over the first
// 20,000 merges of Llama 3: the 256 byte characters and the tokens those
// merges make, numbered in Llama 3's order, and three added tokens. Its
// merges are [left, right] pairs, as newer files write them.
function variantJson(layout) {
  const ids = new Set();
  const byId = llama3Tokenizer.vocabById;
  const idOf = llama3Tokenizer.vocabByString;
  for (let id = 0; id < 128000; id++) {
    if ([...byId[id]].length === 1) ids.add(id);
  }
  const merges = MERGES.slice(0, 20000).map((m) => m.split(" "));
  for (const [a, b] of merges) for (const s of [a, b, a + b]) ids.add(idOf.get(s));
  const vocab = {};
  let n = 0;
  for (const id of [...ids].sort((x, y) => x - y)) vocab[byId[id]] = n++;
  const added = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"].map((s, i) => addedToken(n + i, s));
  const t = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: null,
    post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: byteLevel(true, true),
    model: bpe(vocab, merges, false),
  };
  switch (layout) {
    case "gpt2": // GPT-2: the byte-level pre-tokenizer's own split, here with a space before each piece
      t.pre_tokenizer = byteLevel(true, true);
      break;
    case "smollm2": // SmolLM2 (StarCoder's tokenizer): digits one by one, then GPT-2's split
      t.pre_tokenizer = { type: "Sequence", pretokenizers: [{ type: "Digits", individual_digits: true }, byteLevel(false, true)] };
      break;
    case "qwen2": // Qwen2: NFC, and Llama 3's split but for single digits
      t.normalizer = { type: "NFC" };
      t.pre_tokenizer = {
        type: "Sequence",
        pretokenizers: [{ type: "Split", pattern: { Regex: QWEN2_PATTERN }, behavior: "Isolated", invert: false }, byteLevel(false, false)],
      };
      break;
  }
  return t;
}

function encode(json, texts) {
  const tok = new Tokenizer(json, { clean_up_tokenization_spaces: false });
  const out = { hf: [], hf_special: [], hf_decoded: [] };
  texts.forEach((text, i) => {
    const ids = tok.encode(text, { add_special_tokens: false }).ids;
    out.hf.push(ids);
    out.hf_decoded.push(ids.length ? tok.decode(ids, { skip_special_tokens: false }) : "");
    if (i < SPECIAL_TEXTS) out.hf_special.push(tok.encode(text, { add_special_tokens: true }).ids);
  });
  return out;
}

if (cmd === "llama3") {
  const dir = args[0];
  const input = JSON.parse(fs.readFileSync(path.join(dir, "in.json"), "utf8"));
  const out = {};
  const llama3 = llama3Json();
  fs.writeFileSync(path.join(dir, "llama3.json"), JSON.stringify(llama3));
  out.llama3 = encode(llama3, input.texts);
  out.llama3.llama3_js = input.texts.map((text) => llama3Tokenizer.encode(text, { bos: false, eos: false }));
  for (const layout of ["gpt2", "smollm2", "qwen2"]) {
    const t = variantJson(layout);
    fs.writeFileSync(path.join(dir, layout + ".json"), JSON.stringify(t));
    out[layout] = encode(t, input.texts.slice(0, input.variant_texts));
  }
  fs.writeFileSync(path.join(dir, "out.json"), JSON.stringify(out));
} else if (cmd === "encode") {
  const [tokPath, inPath, outPath] = args;
  const input = JSON.parse(fs.readFileSync(inPath, "utf8"));
  fs.writeFileSync(outPath, JSON.stringify(encode(JSON.parse(fs.readFileSync(tokPath, "utf8")), input.texts)));
} else {
  console.error("usage: node ref.mjs llama3 DIR | encode TOKENIZER.json IN.json OUT.json");
  process.exit(2);
}
