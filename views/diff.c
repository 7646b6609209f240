/*
 * diff.c -- unified line diffs.  Lines are interned to integers (hash table on their bytes),
 * then Myers' O((N+M)D) algorithm in linear space: each region, with its common prefix and
 * suffix stripped, is split at a point on an optimal path found by running the forward and
 * backward searches towards each other (the "middle snake" bisection), and the halves are
 * pushed on an explicit stack (no recursion).  Each region's search stops after
 * MAX_EDITS_REGION edit steps, and all regions together after WORK_LIMIT diagonal steps: such a
 * region is then shown as removed and added whole (still a correct diff, maybe not minimal).
 */
#include "views.h"

#include <string.h>

#define MAX_EDITS_REGION 10000
#define WORK_LIMIT 400000000ll

typedef struct Lines {
  int64_t n;
  const char **s;  /* line starts */
  size_t *len;     /* without the newline */
  int32_t *id;     /* interned */
} Lines;

static void split_lines(Lines *L, const char *t, size_t n) {
  int64_t cnt = 0;
  for (size_t i = 0; i < n; i++) cnt += t[i] == '\n';
  if (n && t[n - 1] != '\n') cnt++;
  L->n = cnt;
  L->s = gp_malloc(sizeof(char *) * (size_t)(cnt + 1));
  L->len = gp_malloc(sizeof(size_t) * (size_t)(cnt + 1));
  L->id = gp_malloc(sizeof(int32_t) * (size_t)(cnt + 1));
  int64_t k = 0;
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n ? start < n : t[i] == '\n') {
      L->s[k] = t + start;
      L->len[k] = i - start;
      k++;
      start = i + 1;
    }
  }
}

static void lines_free(Lines *L) {
  gp_free(L->s);
  gp_free(L->len);
  gp_free(L->id);
}

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h ^ (h >> 29);
}

/* Give equal lines of a and b equal ids. */
static void intern(Lines *a, Lines *b) {
  size_t total = (size_t)(a->n + b->n), cap = 16;
  while (cap < total * 2) cap *= 2;
  struct Slot {
    const char *s;
    size_t len;
    int32_t id;
  } *tab = gp_calloc(cap, sizeof *tab);
  int32_t next = 0;
  Lines *both[2] = {a, b};
  for (int w = 0; w < 2; w++) {
    Lines *L = both[w];
    for (int64_t i = 0; i < L->n; i++) {
      size_t h = (size_t)hash_bytes(L->s[i], L->len[i]) & (cap - 1);
      while (tab[h].s && !(tab[h].len == L->len[i] && memcmp(tab[h].s, L->s[i], L->len[i]) == 0))
        h = (h + 1) & (cap - 1);
      if (!tab[h].s) tab[h] = (struct Slot){L->s[i], L->len[i], next++};
      L->id[i] = tab[h].id;
    }
  }
  gp_free(tab);
}

typedef struct Region {
  int64_t a0, a1, b0, b1;
} Region;

typedef struct Differ {
  const int32_t *A, *B;
  bool *del, *ins;
  int64_t *v1, *v2; /* sized 2 * (max d) + 2 */
  int64_t work;
} Differ;

static void mark_all(Differ *D, const Region *r) {
  for (int64_t i = r->a0; i < r->a1; i++) D->del[i] = true;
  for (int64_t j = r->b0; j < r->b1; j++) D->ins[j] = true;
}

/* The bisection of diff-match-patch's diff_bisect (Myers 1986, section 4b) on A[a0..a1) and
 * B[b0..b1), both non-empty with no common prefix or suffix.  True with the split point, or
 * false when the edit budget ran out. */
static bool bisect(Differ *D, const Region *r, int64_t *sx, int64_t *sy) {
  const int32_t *A = D->A + r->a0, *B = D->B + r->b0;
  int64_t n = r->a1 - r->a0, m = r->b1 - r->b0;
  int64_t max_d = (n + m + 1) / 2;
  if (max_d > MAX_EDITS_REGION) max_d = MAX_EDITS_REGION;
  int64_t off = max_d, vlen = 2 * max_d + 2;
  int64_t *v1 = D->v1, *v2 = D->v2;
  for (int64_t i = 0; i < vlen; i++) v1[i] = v2[i] = -1;
  v1[off + 1] = 0;
  v2[off + 1] = 0;
  int64_t delta = n - m;
  bool front = delta & 1;
  int64_t k1start = 0, k1end = 0, k2start = 0, k2end = 0;
  for (int64_t d = 0; d < max_d; d++) {
    if (D->work > WORK_LIMIT) return false;
    D->work += 2 * d + 2;
    for (int64_t k1 = -d + k1start; k1 <= d - k1end; k1 += 2) {
      int64_t k1o = off + k1, x1;
      if (k1 == -d || (k1 != d && v1[k1o - 1] < v1[k1o + 1]))
        x1 = v1[k1o + 1];
      else
        x1 = v1[k1o - 1] + 1;
      int64_t y1 = x1 - k1;
      while (x1 < n && y1 < m && A[x1] == B[y1]) x1++, y1++;
      v1[k1o] = x1;
      if (x1 > n) {
        k1end += 2;
      } else if (y1 > m) {
        k1start += 2;
      } else if (front) {
        int64_t k2o = off + delta - k1;
        if (k2o >= 0 && k2o < vlen && v2[k2o] != -1 && x1 >= n - v2[k2o]) {
          *sx = x1;
          *sy = y1;
          return true;
        }
      }
    }
    for (int64_t k2 = -d + k2start; k2 <= d - k2end; k2 += 2) {
      int64_t k2o = off + k2, x2;
      if (k2 == -d || (k2 != d && v2[k2o - 1] < v2[k2o + 1]))
        x2 = v2[k2o + 1];
      else
        x2 = v2[k2o - 1] + 1;
      int64_t y2 = x2 - k2;
      while (x2 < n && y2 < m && A[n - x2 - 1] == B[m - y2 - 1]) x2++, y2++;
      v2[k2o] = x2;
      if (x2 > n) {
        k2end += 2;
      } else if (y2 > m) {
        k2start += 2;
      } else if (!front) {
        int64_t k1o = off + delta - k2;
        if (k1o >= 0 && k1o < vlen && v1[k1o] != -1) {
          int64_t x1 = v1[k1o], y1 = off + x1 - k1o;
          if (x1 >= n - x2) {
            *sx = x1;
            *sy = y1;
            return true;
          }
        }
      }
    }
  }
  return false;
}

static void diff_regions(Differ *D, int64_t na, int64_t nb) {
  GPVec st = {0}; /* Region* */
  Region *top = gp_malloc(sizeof *top);
  *top = (Region){0, na, 0, nb};
  gp_vec_push(&st, top);
  while (st.len) {
    Region *r = gp_vec_pop(&st);
    while (r->a0 < r->a1 && r->b0 < r->b1 && D->A[r->a0] == D->B[r->b0]) r->a0++, r->b0++;
    while (r->a0 < r->a1 && r->b0 < r->b1 && D->A[r->a1 - 1] == D->B[r->b1 - 1]) r->a1--, r->b1--;
    int64_t sx, sy;
    if (r->a0 == r->a1 || r->b0 == r->b1 || !bisect(D, r, &sx, &sy)) {
      mark_all(D, r);
      gp_free(r);
      continue;
    }
    Region *hi = gp_malloc(sizeof *hi);
    *hi = (Region){r->a0 + sx, r->a1, r->b0 + sy, r->b1};
    r->a1 = r->a0 + sx;
    r->b1 = r->b0 + sy;
    gp_vec_push(&st, hi);
    gp_vec_push(&st, r);
  }
  gp_vec_free(&st);
}

static void put_range(GPBuf *out, int64_t start, int64_t count) {
  if (count == 1)
    gp_buf_printf(out, "%lld", (long long)start);
  else
    gp_buf_printf(out, "%lld,%lld", (long long)(count ? start : start - 1), (long long)count);
}

static void put_line(GPBuf *out, char tag, const Lines *L, int64_t i) {
  gp_buf_putc(out, tag);
  gp_buf_put(out, L->s[i], L->len[i]);
  gp_buf_putc(out, '\n');
}

int64_t gp_diff_unified(GPBuf *out, const char *a, size_t alen, const char *b, size_t blen, const char *name_a,
                        const char *name_b, int context) {
  if (context < 0) context = 0;
  Lines LA = {0}, LB = {0};
  split_lines(&LA, a ? a : "", a ? alen : 0);
  split_lines(&LB, b ? b : "", b ? blen : 0);
  intern(&LA, &LB);
  int64_t na = LA.n, nb = LB.n;
  int64_t maxd = (na + nb + 1) / 2;
  if (maxd > MAX_EDITS_REGION) maxd = MAX_EDITS_REGION;
  Differ D = {.A = LA.id, .B = LB.id};
  D.del = gp_calloc((size_t)na + 1, 1);
  D.ins = gp_calloc((size_t)nb + 1, 1);
  D.v1 = gp_malloc(sizeof(int64_t) * (size_t)(2 * maxd + 2));
  D.v2 = gp_malloc(sizeof(int64_t) * (size_t)(2 * maxd + 2));
  diff_regions(&D, na, nb);
  /* the edit script: ops in order, 0 equal, 1 removed, 2 added */
  int64_t nops = 0, changes = 0;
  uint8_t *op = gp_malloc((size_t)(na + nb + 1));
  int64_t *ai = gp_malloc(sizeof(int64_t) * (size_t)(na + nb + 1));
  int64_t *bi = gp_malloc(sizeof(int64_t) * (size_t)(na + nb + 1));
  for (int64_t i = 0, j = 0; i < na || j < nb;) {
    ai[nops] = i;
    bi[nops] = j;
    if (i < na && D.del[i]) {
      op[nops++] = 1, i++, changes++;
    } else if (j < nb && D.ins[j]) {
      op[nops++] = 2, j++, changes++;
    } else {
      op[nops++] = 0, i++, j++;
    }
  }
  if (changes) {
    gp_buf_printf(out, "--- %s\n+++ %s\n", name_a ? name_a : "a", name_b ? name_b : "b");
    int64_t k = 0;
    while (k < nops) {
      while (k < nops && op[k] == 0) k++;
      if (k == nops) break;
      int64_t start = k - context < 0 ? 0 : k - context;
      /* extend while the next change is within 2 * context equal lines */
      int64_t end = k;
      for (;;) {
        while (end < nops && op[end] != 0) end++;
        int64_t eq = end;
        while (eq < nops && op[eq] == 0 && eq - end <= 2 * context) eq++;
        if (eq < nops && op[eq] != 0 && eq - end <= 2 * context) {
          end = eq;
          continue;
        }
        break;
      }
      int64_t stop = end + context > nops ? nops : end + context;
      int64_t ca = 0, cb = 0;
      for (int64_t q = start; q < stop; q++) ca += op[q] != 2, cb += op[q] != 1;
      gp_buf_puts(out, "@@ -");
      put_range(out, ai[start] + 1, ca);
      gp_buf_puts(out, " +");
      put_range(out, bi[start] + 1, cb);
      gp_buf_puts(out, " @@\n");
      for (int64_t q = start; q < stop; q++) {
        if (op[q] == 0) put_line(out, ' ', &LA, ai[q]);
        else if (op[q] == 1) put_line(out, '-', &LA, ai[q]);
        else put_line(out, '+', &LB, bi[q]);
      }
      k = stop;
    }
  }
  gp_free(op);
  gp_free(ai);
  gp_free(bi);
  gp_free(D.del);
  gp_free(D.ins);
  gp_free(D.v1);
  gp_free(D.v2);
  lines_free(&LA);
  lines_free(&LB);
  return changes;
}
