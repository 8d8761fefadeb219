"""Trains bpe.model, the small SentencePiece BPE model of tec's tokenizer
tests (tokenizer/ref_test.go), with the options of Llama 2's tokenizer:
byte fallback, digits split, no normalization, a dummy prefix, whitespace
kept as it is.

    /usr/bin/python3 train.py        # in tokenizer/testdata/sp; writes bpe.model

The training text is generated here, from a fixed seed: English-like words,
Cyrillic, Greek and CJK text, code and numbers. Characters outside it
(emoji, Arabic, Devanagari, most of CJK) are left to byte fallback.
Needs Debian's python3-sentencepiece.
"""

import os
import random

import sentencepiece as spm

WORDS = """the of and to in is was for on that with as by at from it this be are have not or an but they which
one you all were her she there would their we him been has when who will more no if out so said what up its about
into than them can only other new some could time these two may then do first any my now such like our over man me
even most made after also did many before must through back years where much your way well down should because each
just those people how too little state good very make world still own see men work long get here between both life
being under never day same another know while last might us great old year off come since against go came right
used take three token model text encode decode merge vocabulary kernel tensor compile inference attention layer
weight matrix vector batch sequence prompt generate sample byte piece unicode character string number""".split()
CYRILLIC = "привет мир как дела это тест текст слово язык модель данные время человек".split()
GREEK = "καλημέρα κόσμε λόγος άνθρωπος χρόνος γλώσσα".split()
CJK = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴切图列农族衣"
CODE = [
    "def main():\n    print('hello')\n",
    "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
    "if x == 1:\n    return True\nelse:\n    return False\n",
    "func f(a, b int) int { return a + b }\n",
    "<p>Hello, <b>world</b>!</p>\n",
    "SELECT * FROM table WHERE id = 42;\n",
]


def sentence(r):
    kind = r.random()
    if kind < 0.55:
        words = [r.choice(WORDS) for _ in range(r.randint(3, 14))]
        if r.random() < 0.3:
            words[0] = words[0].capitalize()
        s = " ".join(words)
        if r.random() < 0.3:
            s += " " + str(r.randint(0, 10 ** r.randint(1, 6)))
        return s + r.choice([".", ",", "!", "?", ":", ";", ""])
    if kind < 0.7:
        return " ".join(r.choice(CYRILLIC) for _ in range(r.randint(2, 9))) + "."
    if kind < 0.75:
        return " ".join(r.choice(GREEK) for _ in range(r.randint(2, 6))) + "."
    if kind < 0.88:
        return "".join(r.choice(CJK[:400]) for _ in range(r.randint(4, 20))) + "。"
    return r.choice(CODE)


def main():
    r = random.Random(20240601)
    # The model records its input and prefix: relative paths keep it the
    # same from run to run.
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    try:
        with open("train.txt", "w", encoding="utf-8") as f:
            for _ in range(30000):
                f.write(sentence(r) + "\n")
        spm.SentencePieceTrainer.train(
            input="train.txt",
            model_prefix="bpe",
            model_type="bpe",
            vocab_size=3000,
            byte_fallback=True,
            split_digits=True,
            allow_whitespace_only_pieces=True,
            normalization_rule_name="identity",
            add_dummy_prefix=True,
            remove_extra_whitespaces=False,
            character_coverage=1.0,
            unk_id=0,
            bos_id=1,
            eos_id=2,
            pad_id=-1,
            num_threads=1,
            minloglevel=2,
        )
    finally:
        for f in ("train.txt", "bpe.vocab"):
            if os.path.exists(f):
                os.remove(f)


if __name__ == "__main__":
    main()
