"""Scanned-document fixtures for the OCR stage (reader/ocr): text is typeset onto page
images, the pages are degraded like an office scan (rotation, blur, noise, JPEG) and saved
as image-only PDFs (no text layer), with the source text beside them for character error
rates.

  scan.py scifact --corpus DATA/scifact --n 300 --out DIR [--dpi 200]
      DIR/pdf/<id>.pdf  one scanned PDF per abstract (title as a bold heading)
      DIR/corpus.jsonl  the born-digital subset (the same records, BEIR format)
      DIR/queries.jsonl, DIR/qrels/test.tsv  the test queries whose gold documents are all kept
  scan.py fixtures --corpus DATA/scifact --out reader/testdata/ocr
      the small fixtures the reader tests use (see reader/testdata/ocr/README.md)
  scan.py dossier --corpus DATA/legalqa-nl --pages 300 --out FILE.pdf
      one scanned dossier of that many pages: Dutch laws of legalqa-nl in corpus order, each
      from a new page ("## Artikel" lines as headings), as one image-only PDF (issue 56)

Pillow draws the pages (DejaVu fonts); reportlab writes the encrypted and the 2,000-page
PDFs. Everything is seeded: a rerun writes the same files.
"""
import argparse
import io
import json
import os
import random
import struct
import zlib

from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
A4 = (8.27, 11.69)  # inches


def font(bold, pt, dpi):
    name = "DejaVuSerif-Bold.ttf" if bold else "DejaVuSerif.ttf"
    return ImageFont.truetype(os.path.join(FONT_DIR, name), round(pt * dpi / 72))


def wrap(text, f, width):
    lines, cur = [], ""
    for w in text.split():
        t = (cur + " " + w).strip()
        if f.getlength(t) <= width or not cur:
            cur = t
        else:
            lines.append(cur)
            cur = w
    if cur:
        lines.append(cur)
    return lines


def typeset(blocks, dpi):
    """blocks: list of (kind, text), kind in {"title", "heading", "body", "pagebreak"}. Returns page images
    (mode L, white background) and the source text of each page (blocks joined by blank lines)."""
    w, h = round(A4[0] * dpi), round(A4[1] * dpi)
    margin = round(0.9 * dpi)
    styles = {"title": (True, 14), "heading": (True, 11.5), "body": (False, 10.5)}
    pages, texts = [], []
    img = draw = None
    y = 0
    cur_text = []

    def new_page():
        nonlocal img, draw, y, cur_text
        if img is not None:
            pages.append(img)
            texts.append("\n\n".join(cur_text))
        img = Image.new("L", (w, h), 255)
        draw = ImageDraw.Draw(img)
        y = margin
        cur_text = []

    new_page()
    for kind, text in blocks:
        if kind == "pagebreak":
            new_page()
            continue
        bold, pt = styles[kind]
        f = font(bold, pt, dpi)
        lh = round(pt * 1.45 * dpi / 72)
        lines = wrap(text, f, w - 2 * margin)
        if kind != "body" and y + 3 * lh > h - margin:
            new_page()
        written = []
        for ln in lines:
            if y + lh > h - margin:
                cur_text.append(" ".join(written))
                written = []
                new_page()
            draw.text((margin, y), ln, font=f, fill=0)
            written.append(ln)
            y += lh
        cur_text.append(" ".join(written))
        y += round(lh * (0.9 if kind == "body" else 0.5))
    new_page()
    return pages, texts


def degrade(img, rng, level):
    """A scan's defects: a slight rotation, blur, grey noise and speckles."""
    if level == 0:
        return img
    angle = rng.uniform(-0.8, 0.8) * level
    img = img.rotate(angle, resample=Image.BICUBIC, expand=False, fillcolor=255)
    img = img.filter(ImageFilter.GaussianBlur(radius=0.45 + 0.35 * level))
    noise = Image.effect_noise(img.size, 10 + 8 * level)  # grey noise around 128
    img = Image.blend(img, noise, 0.08 * level).point(lambda v: min(255, int(v * 1.08)))
    px = img.load()
    for _ in range(int(img.size[0] * img.size[1] * 0.0004 * level)):
        px[rng.randrange(img.size[0]), rng.randrange(img.size[1])] = rng.choice((0, 255))
    return img


def save_pdf(pages, path, dpi, quality):
    """An image-only PDF: each page one JPEG (DCTDecode) image, no text layer."""
    first, rest = pages[0], pages[1:]
    first.save(path, "PDF", resolution=dpi, save_all=True, append_images=rest, quality=quality)


def read_scifact(corpus):
    docs = {}
    with open(os.path.join(corpus, "corpus.jsonl")) as fh:
        for line in fh:
            d = json.loads(line)
            docs[d["_id"]] = d
    queries = {}
    with open(os.path.join(corpus, "queries.jsonl")) as fh:
        for line in fh:
            q = json.loads(line)
            queries[q["_id"]] = q
    qrels = []
    with open(os.path.join(corpus, "qrels", "test.tsv")) as fh:
        for line in fh:
            p = line.rstrip("\n").split("\t")
            if p[0] == "query-id" or len(p) < 3:
                continue
            qrels.append((p[0], p[1], p[2]))
    return docs, queries, qrels


def scifact_blocks(d):
    return [("title", d["title"]), ("body", d["text"])]


def cmd_scifact(a):
    docs, queries, qrels = read_scifact(a.corpus)
    gold = {}
    for q, d, s in qrels:
        gold.setdefault(q, []).append(d)
    keep, kept_q = [], []
    for q in sorted(gold, key=int):
        new = [d for d in gold[q] if d not in keep]
        if len(keep) + len(new) > a.n:
            continue
        keep += new
        kept_q.append(q)
    # Fill up to n with other documents (distractors), in corpus order.
    for d in docs:
        if len(keep) >= a.n:
            break
        if d not in keep:
            keep.append(d)
    os.makedirs(os.path.join(a.out, "pdf"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "qrels"), exist_ok=True)
    rng = random.Random(a.seed)
    pages_total = 0
    with open(os.path.join(a.out, "corpus.jsonl"), "w") as fh:
        for d in keep:
            fh.write(json.dumps(docs[d]) + "\n")
    with open(os.path.join(a.out, "queries.jsonl"), "w") as fh:
        for q in kept_q:
            fh.write(json.dumps(queries[q]) + "\n")
    with open(os.path.join(a.out, "qrels", "test.tsv"), "w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q, d, s in qrels:
            if q in kept_q:
                fh.write(f"{q}\t{d}\t{s}\n")
    # Queries first: hack/ocr-measure keeps those whose judged documents were all scanned,
    # so an interrupted run is still usable.
    for i, d in enumerate(keep):
        pages, _ = typeset(scifact_blocks(docs[d]), a.dpi)
        pages = [degrade(p, rng, a.level) for p in pages]
        save_pdf(pages, os.path.join(a.out, "pdf", d + ".pdf"), a.dpi, a.quality)
        pages_total += len(pages)
    print(f"{len(keep)} documents, {pages_total} pages, {len(kept_q)} queries -> {a.out}")


RAADSBESLUIT = [
    ("title", "Raadsbesluit 2026-041: herinrichting van het Stationsplein"),
    ("body", "De raad van de gemeente Zuidervaart, gelezen het voorstel van het college van burgemeester en "
             "wethouders van 3 maart 2026, gelet op artikel 108 van de Gemeentewet en de Algemene wet bestuursrecht;"),
    ("heading", "Beslispunt 1"),
    ("body", "Het voorlopig ontwerp voor de herinrichting van het Stationsplein vast te stellen, met een fietsenstalling "
             "voor 1.200 fietsen onder het plein en een autovrije zone tussen de Kerkstraat en de Molenweg."),
    ("heading", "Beslispunt 2"),
    ("body", "Een krediet van 4.350.000 euro beschikbaar te stellen voor de uitvoering in 2027 en 2028, te dekken uit de "
             "reserve mobiliteit en een bijdrage van de provincie van 1.100.000 euro."),
    ("heading", "Motivering"),
    ("body", "Het Stationsplein is het drukste knooppunt van de gemeente: dagelijks stappen er ruim 14.000 reizigers in "
             "of uit. Fietsen staan nu op de stoep en blokkeren de looproutes naar de bushaltes. Uit de verkeerstellingen "
             "van 2025 blijkt dat het aantal fietsers sinds 2019 met een derde is gestegen. De ondergrondse stalling maakt "
             "het plein vrij voor voetgangers en markten; de autovrije zone verbetert de verkeersveiligheid bij de "
             "basisschool aan de Molenweg. Bewoners en ondernemers zijn in drie avonden geraadpleegd; hun opmerkingen over "
             "laden en lossen zijn verwerkt in venstertijden van 6.00 tot 11.00 uur."),
    ("pagebreak", ""),
    ("heading", "Artikel 1 Inwerkingtreding"),
    ("body", "Dit besluit treedt in werking op de dag na bekendmaking in het Gemeenteblad."),
    ("heading", "Stemverhouding"),
    ("body", "Aangenomen met 23 stemmen voor en 8 stemmen tegen. De fracties van Lokaal Belang en de Partij voor de "
             "Ondernemer stemden tegen. Aldus besloten in de openbare vergadering van 26 maart 2026, de griffier, "
             "mr. J. de Vries, de voorzitter, drs. A. Bakker."),
]


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def huge_png(path, w, h):
    """A valid 1-bit white PNG of w x h pixels: small on disk, w*h bytes once decoded to grey."""
    rowbytes = (w + 7) // 8
    comp = zlib.compressobj(9)
    row = b"\x00" + b"\xff" * rowbytes
    idat = b"".join(comp.compress(row) for _ in range(h)) + comp.flush()
    with open(path, "wb") as fh:
        fh.write(b"\x89PNG\r\n\x1a\n")
        fh.write(png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 1, 0, 0, 0, 0)))
        fh.write(png_chunk(b"IDAT", idat))
        fh.write(png_chunk(b"IEND", b""))


def blank_pdf(path, n):
    """An n-page scanned-looking PDF: every A4 page shows the same 8x8 light grey image
    (one shared image object), no text. Written by hand to stay small."""
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        ("<< /Type /Pages /Count %d /MediaBox [0 0 595 842] /Resources << /XObject << /Im0 3 0 R >> >> /Kids [%s] >>"
         % (n, " ".join("%d 0 R" % (5 + i) for i in range(n)))).encode(),
        b"<< /Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length 64 >>\nstream\n"
        + b"\xfa" * 64 + b"\nendstream",
        b"<< /Length 31 >>\nstream\nq 595 0 0 842 0 0 cm /Im0 Do Q\nendstream",
    ] + [b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>"] * n
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, o in enumerate(objs):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    with open(path, "wb") as fh:
        fh.write(out)


def cmd_fixtures(a):
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    out = a.out
    os.makedirs(out, exist_ok=True)
    rng = random.Random(a.seed)
    dpi = 200
    # Dutch council resolution: two scanned pages, and the first page as image documents.
    pages, texts = typeset(RAADSBESLUIT, dpi)
    with open(os.path.join(out, "raadsbesluit-scan.txt"), "w") as fh:
        fh.write("\n\f\n".join(texts) + "\n")
    scanned = [degrade(p, rng, 1) for p in pages]
    save_pdf(scanned, os.path.join(out, "raadsbesluit-scan.pdf"), dpi, 60)
    small = scanned[0]
    small.save(os.path.join(out, "raadsbesluit-p1.png"), optimize=True)
    small.save(os.path.join(out, "raadsbesluit-p1.jpg"), quality=60, dpi=(dpi, dpi))
    small.point(lambda v: 255 if v > 150 else 0).convert("1").save(
        os.path.join(out, "raadsbesluit-p1.tiff"), compression="group4", dpi=(dpi, dpi))
    # Both pages in one multi-page TIFF (one IFD per page), as scanners write them.
    bilevel = [p.point(lambda v: 255 if v > 150 else 0).convert("1") for p in scanned]
    bilevel[0].save(os.path.join(out, "raadsbesluit-scan.tiff"), compression="group4", dpi=(dpi, dpi),
                    save_all=True, append_images=bilevel[1:])
    # Heavily degraded page: exercises the second pass.
    heavy = degrade(pages[0], rng, 2.5).resize((pages[0].size[0] * 2 // 3, pages[0].size[1] * 2 // 3))
    heavy.save(os.path.join(out, "raadsbesluit-p1-poor.jpg"), quality=35, dpi=(dpi * 2 // 3, dpi * 2 // 3))
    # Two SciFact abstracts, one page each.
    docs, _, _ = read_scifact(a.corpus)
    ids = ["4983", "5836"]
    spages, stexts = [], []
    for d in ids:
        p, t = typeset(scifact_blocks(docs[d]), dpi)
        spages += p
        stexts += t
    with open(os.path.join(out, "scifact-scan.txt"), "w") as fh:
        fh.write("\n\f\n".join(stexts) + "\n")
    save_pdf([degrade(p, rng, 1) for p in spages], os.path.join(out, "scifact-scan.pdf"), dpi, 60)
    # Bad input.
    buf = io.BytesIO()
    small.crop((0, 0, small.size[0], small.size[1] // 4)).save(buf, "PNG")
    png = buf.getvalue()
    with open(os.path.join(out, "truncated.png"), "wb") as fh:
        fh.write(png[: len(png) // 3])
    corrupt = bytearray(png)
    for i in range(200, len(corrupt), 97):  # bytes flipped after the header: CRC and zlib errors
        corrupt[i] ^= 0x5A
    with open(os.path.join(out, "corrupt.png"), "wb") as fh:
        fh.write(corrupt)
    huge_png(os.path.join(out, "huge-30000.png"), 30000, 30000)
    blank_pdf(os.path.join(out, "blank-2000.pdf"), 2000)
    sbuf = io.BytesIO()
    scanned[0].save(sbuf, "JPEG", quality=50)
    c = canvas.Canvas(os.path.join(out, "encrypted-scan.pdf"), pagesize=(595, 842), encrypt="geheim")
    c.drawImage(ImageReader(io.BytesIO(sbuf.getvalue())), 0, 0, 595, 842)
    c.showPage()
    c.save()
    print("fixtures ->", out)


def law_blocks(text):
    blocks = []
    for para in text.split("\n\n"):
        para = para.strip()
        if not para:
            continue
        if para.startswith("#"):
            blocks.append(("title" if para.startswith("# ") else "heading", para.lstrip("# ")))
        else:
            blocks.append(("body", para))
    return blocks


def cmd_dossier(a):
    rng = random.Random(a.seed)
    pages = []
    with open(os.path.join(a.corpus, "corpus.jsonl")) as fh:
        for line in fh:
            if len(pages) >= a.pages:
                break
            d = json.loads(line)
            imgs, _ = typeset(law_blocks(d["text"]), a.dpi)
            for img in imgs[: a.pages - len(pages)]:
                # Keep each page as its JPEG, not as pixels: 300 pages of pixels are 1.2 GB.
                buf = io.BytesIO()
                degrade(img, rng, a.level).save(buf, "JPEG", quality=a.quality)
                pages.append(buf.getvalue())
    ims = [Image.open(io.BytesIO(b)) for b in pages]
    ims[0].save(a.out, "PDF", resolution=a.dpi, save_all=True, append_images=ims[1:], quality=a.quality)
    print(f"{len(pages)} pages -> {a.out} ({os.path.getsize(a.out)} bytes)")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scifact")
    s.add_argument("--corpus", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--n", type=int, default=300)
    s.add_argument("--dpi", type=int, default=200)
    s.add_argument("--level", type=float, default=1.0)
    s.add_argument("--quality", type=int, default=60)
    s.add_argument("--seed", type=int, default=17)
    f = sub.add_parser("fixtures")
    f.add_argument("--corpus", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--seed", type=int, default=17)
    d = sub.add_parser("dossier")
    d.add_argument("--corpus", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--pages", type=int, default=300)
    d.add_argument("--dpi", type=int, default=200)
    d.add_argument("--level", type=float, default=1.0)
    d.add_argument("--quality", type=int, default=60)
    d.add_argument("--seed", type=int, default=17)
    a = p.parse_args()
    {"scifact": cmd_scifact, "fixtures": cmd_fixtures, "dossier": cmd_dossier}[a.cmd](a)


if __name__ == "__main__":
    main()
