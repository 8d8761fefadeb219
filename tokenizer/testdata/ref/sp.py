"""The SentencePiece reference of tec's tokenizer tests (tokenizer/ref_test.go).

    python3 sp.py convert MODEL OUT.json
        writes the tokenizer.json of a SentencePiece BPE model in the layout
        of Llama 2's (Hugging Face's LlamaConverter, legacy): the pieces as
        the vocabulary, with <unk>, <s> and </s> as special added tokens;
        merges derived from the pieces; the normalizer Prepend "▁" and
        Replace " " with "▁"; byte fallback; the decoder Replace "▁" with
        " ", ByteFallback, Fuse and Strip one leading space; <s> before the
        text as the post-processor.
    python3 sp.py encode MODEL IN.json OUT.json
        writes {"sp": [...]}, SentencePiece's ids of IN.json's texts. As in
        Hugging Face's tokenizer, <unk>, <s> and </s> in a text are those
        tokens, and SentencePiece encodes the pieces between them.

Needs Debian's python3-sentencepiece.
"""

import json
import sys

import sentencepiece as spm

SPECIALS = ["<unk>", "<s>", "</s>"]


def merges(sp):
    """Every split of a piece into two pieces is a merge, ranked by the
    piece's score (the highest first), then with the longer left part
    first, then in the order of the pieces' ids, which is the order of
    Hugging Face's converter: SentencePiece merges the adjacent pair whose
    merged piece scores highest."""
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    out = []
    for piece, pid in vocab.items():
        score = 0.0 if piece in SPECIALS else sp.get_score(pid)
        for k in range(1, len(piece)):
            left, right = piece[:k], piece[k:]
            if left in vocab and right in vocab:
                out.append((-score, -len(left), -len(right), left, right))
    # A stable sort: pieces of one score in id order, as above.
    out.sort(key=lambda m: m[:3])
    return [[m[3], m[4]] for m in out]


def convert(model, path):
    sp = spm.SentencePieceProcessor(model_file=model)
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    for i, s in enumerate(SPECIALS):
        assert vocab.get(s) == i, (s, vocab.get(s))
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
            for i, s in enumerate(SPECIALS)
        ],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": "▁"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            ],
        },
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [
                {"SpecialToken": {"id": "<s>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "<s>", "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
        },
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges(sp),
        },
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)


def split_specials(text):
    """The pieces of text between the special tokens, and the tokens,
    leftmost and longest first."""
    out, i, start = [], 0, 0
    while i < len(text):
        match = max((s for s in SPECIALS if text.startswith(s, i)), key=len, default=None)
        if match is None:
            i += 1
            continue
        if start < i:
            out.append(text[start:i])
        out.append(SPECIALS.index(match))
        i += len(match)
        start = i
    if start < len(text):
        out.append(text[start:])
    return out


def encode(model, inp, outp):
    sp = spm.SentencePieceProcessor(model_file=model)
    with open(inp, encoding="utf-8") as f:
        texts = json.load(f)["texts"]
    out = []
    for text in texts:
        ids = []
        for piece in split_specials(text):
            if isinstance(piece, int):
                ids.append(piece)
            else:
                ids.extend(sp.encode(piece))
        out.append(ids)
    with open(outp, "w", encoding="utf-8") as f:
        json.dump({"sp": out}, f)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "encode":
        encode(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("usage: sp.py convert MODEL OUT.json | encode MODEL IN.json OUT.json")
