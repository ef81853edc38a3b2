"""Writes the tokenizer parity reference for the Go tokenizer (embedder/tokenize): real
strings tokenized by Hugging Face `tokenizers` (pinned in requirements.txt), one JSON object
per line: {"source", "text", "ids", "offsets"} with offsets as UTF-8 BYTE offsets into text
(the Python binding reports code-point offsets; they are converted here). Special tokens
([CLS], [SEP]) are included with offsets [0, 0], as HF reports them.

Strings: SciFact titles and abstract sentences, QMSum transcript pieces, Dutch council
text, accented Latin text, NBSP and other Unicode spaces, CJK, emoji (ZWJ sequences, flags,
skin tones), control and format characters, combining marks, over-long words and literal
special tokens; plus real sentences with their spaces swapped for NBSP or upper-cased.

With --dutch (legalqa-nl corpus.jsonl) it adds 200 Dutch law paragraphs (hack/export-model/models.sh
passes it for the models beyond MiniLM).

Usage: tokenizer_reference.py --tokenizer DIR/tokenizer.json --scifact C.jsonl --qmsum Q.jsonl [--dutch L.jsonl] --out F
"""

import argparse
import json
import random
import re

from tokenizers import Tokenizer

HANDWRITTEN = [
    # Dutch (council resolutions and everyday text).
    "Beslispunt 1: De gemeenteraad besluit het bestemmingsplan vast te stellen.",
    "Motivering: gelet op het advies van de commissie ruimtelijke ordening.",
    "Stemverhouding: 23 stemmen vóór, 12 tegen; de motie is aangenomen.",
    "Coördinatie van de ruïne-restauratie geschiedt door de provincie Noord-Brabant.",
    "Het college van burgemeester en wethouders (B&W) heeft op 12 maart 2024 besloten.",
    "Zij zeiden: „Wij gaan akkoord”, maar de financiële paragraaf ontbreekt nog.",
    "Ingevolge art. 4:8 Awb is de belanghebbende in de gelegenheid gesteld zijn zienswijze naar voren te brengen.",
    "De ijzersterke ijsbeer eet ’s avonds een ui, één appel en twee peren.",
    "Overwegende dat de Wmo-uitgaven in 2023 met €1,2 mln. zijn gestegen; verzoekt het college…",
    "Reünie, naïef, Israël, geïnteresseerd, zeeën, hoogoventerrein, cliënten.",
    # Accents, Latin scripts.
    "Café crème à la française, s'il vous plaît — très bien!",
    "Über die Brücke gehen Mädchen und Jungen; Straße, Größe, Äpfel.",
    "El niño comió piñata en Año Nuevo; ¿dónde está la estación?",
    "İstanbul'da ılık bir gün; ŞEHİR, çiçek, ğ, ö, ü.",
    "Tiếng Việt có nhiều dấu: ạ, ằ, ẩ, ễ, ộ, ữ.",
    "Ångström, Øresund, Æsir, Œuvre, Łódź, Dvořák, Škoda, Žižek.",
    "e\u0301 (combining acute) versus \u00e9 (precomposed) and a\u0308\u0301 stacked marks.",
    "Ελληνικά: Σίσυφος ΣΊΣΥΦΟΣ, άλφα βήτα.",
    "Русский текст: Ёжик в тумане, ЙОД, й.",
    "ﬁnancial ﬂow (ligatures) and ℌ𝔢𝔩𝔩𝔬 (math letters), ①②③, ½ ¼.",
    # NBSP and other spaces.
    "10\u00a0km and 5\u00a0%, 3\u202f000 euro, figure\u2007 7, em\u2003space, thin\u2009space.",
    "word\u00a0\u00a0\u00a0word\u00a0",
    "\u00a0leading and trailing nbsp\u00a0",
    "zero\u200bwidth space, soft\u00adhyphen, word\u2060joiner, line\u2028separator, para\u2029sep.",
    "tab\there, newline\nthere, carriage\r\nreturn, vertical\x0btab, form\x0cfeed.",
    "null\x00char, bell\x07, escape\x1b[0m, del\x7f, replacement \ufffd char.",
    # CJK.
    "中文分词测试：我爱北京天安门。",
    "日本語のテキスト：東京は日本の首都です。カタカナ、ひらがな。",
    "한국어 텍스트: 서울은 대한민국의 수도입니다.",
    "Mixed 中文 and English 混合 text with 数字 123.",
    "Rare CJK: 𠀀𠀁 (Ext B) and 㐀 (Ext A) and 豈 (compat).",
    # Emoji.
    "Emoji 😀 and 👍🏽 and 👨‍👩‍👧‍👦 family, flags 🇳🇱🇧🇪, keycap 1️⃣, ❤️.",
    "🚀🚀🚀 launch! 🤖 robots & 🧠 brains.",
    "text✨with✨sparkles and a ☃ snowman and ♥ heart.",
    # Long words, specials, punctuation, symbols.
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101,
    "Supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis.",
    "[CLS] literal [SEP] special tokens [MASK] inside [PAD] text [UNK].",
    "Symbols: $100 + 50% = <tag> ^caret `tick` |pipe| ~tilde ±×÷ §¶ © ® ™ ° µ.",
    "URLs https://example.org/a_b-c?d=e&f=g#h and emails name@example.com.",
    "Quotes «guillemets» ‘single’ “double” ‹angle› and dashes ‐ ‑ ‒ – — ―.",
    "Math: α + β ≥ γ, ∑ x², ∫ f(x) dx, √2 ≈ 1.414, ∞.",
    "",
    " ",
    "\u00a0",
    "a",
    "Ünïcödé ÜBER ALLES",
]


def byte_offsets(text, offsets):
    pos = [0]
    for ch in text:
        pos.append(pos[-1] + len(ch.encode("utf-8")))
    return [[pos[s], pos[e]] for s, e in offsets]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--scifact", required=True)
    ap.add_argument("--qmsum", required=True)
    ap.add_argument("--dutch", help="legalqa-nl corpus.jsonl: adds Dutch law paragraphs")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    rnd = random.Random(4)
    items = [("handwritten", s) for s in HANDWRITTEN]
    with open(args.scifact, encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    for d in docs[:300]:
        items.append(("scifact-title", d["title"]))
    sents = []
    for d in docs[300:900]:
        sents.extend(s for s in re.split(r"(?<=[.!?])\s+", d["text"]) if s)
    for s in rnd.sample(sents, 500):
        items.append(("scifact-sentence", s))
    for d in rnd.sample(docs, 40):
        items.append(("scifact-abstract", d["title"] + "\n\n" + d["text"]))
    # Variants of real sentences: NBSP for spaces, upper case, accents added.
    for s in rnd.sample(sents, 60):
        items.append(("scifact-nbsp", s.replace(" ", "\u00a0")))
    for s in rnd.sample(sents, 40):
        items.append(("scifact-upper", s.upper()))
    with open(args.qmsum, encoding="utf-8") as fh:
        meetings = [json.loads(line) for line in fh]
    for m in rnd.sample(meetings, 40):
        t = m["text"]
        for _ in range(5):
            a = rnd.randrange(0, max(1, len(t) - 2000))
            items.append(("qmsum", t[a:a + rnd.choice([200, 600, 1500])]))

    if args.dutch:
        with open(args.dutch, encoding="utf-8") as fh:
            laws = [json.loads(line) for line in fh]
        paras = [p for law in laws[:60] for p in law["text"].split("\n\n") if len(p) > 20]
        for p in rnd.sample(paras, 200):
            items.append(("legalqa-nl", p[:1500]))

    tok = Tokenizer.from_file(args.tokenizer)
    tok.no_truncation()
    tok.no_padding()
    with open(args.out, "w", encoding="utf-8") as out:
        for source, text in items:
            enc = tok.encode(text)
            out.write(json.dumps({"source": source, "text": text, "ids": enc.ids,
                                  "offsets": byte_offsets(text, enc.offsets)}, ensure_ascii=False) + "\n")
    print(f"wrote {len(items)} tokenized strings to {args.out}")


if __name__ == "__main__":
    main()
