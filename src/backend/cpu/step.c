/* The CPU backend's fused local-optimizer step: dt/formulas.h's per-element update of each kind,
 * in a loop gcc vectorises (one clone per x86-64 level), split over the backend's threads in
 * large chunks when it covers a whole slab. Every element is computed alike, so the bits do not
 * depend on the split. */
#include "cpu_impl.h"
#include "dt/formulas.h"

enum { STEP_CHUNK = 1 << 15 };

/* kind_loop(lo, hi, ...): elements [lo, hi) of one kind's step. The coefficients are copied to
 * a local so that stores through p, m and v cannot alias them (the loop vectorises). */
#define STEP_LOOP(name)                                                                                  \
  DT_CLONES static void name##_loop(size_t lo, size_t hi, const dt_##name##_coef *coef, float ea, float *p, \
                                    const float *g, float *m, float *v, const float *eb) {              \
    const dt_##name##_coef c = *coef;                                                                    \
    for (size_t i = lo; i < hi; i++) dt_##name##_elem(&c, ea, p, g, m, v, eb, i);                         \
  }
DT_STEP_KINDS(STEP_LOOP)
#undef STEP_LOOP

static void step_range(const dt_step *s, size_t lo, size_t hi, float *p, const float *g, float *m, float *v,
                       const float *eb) {
  switch (s->kind) {
#define STEP_CASE(name)                                                 \
  case DT_STEP_##name:                                                  \
    name##_loop(lo, hi, &s->c.name, s->extra_alpha, p, g, m, v, eb);    \
    break;
    DT_STEP_KINDS(STEP_CASE)
#undef STEP_CASE
    default: break;
  }
}

dt_status dt_cpu_local_step(dt_backend *be, size_t n, const dt_step *s, float *p, const float *g, float *m, float *v,
                            const float *extra_b) {
  DT_CHECK((unsigned)s->kind < DT_STEP_KIND_COUNT, DT_ERR_INTERNAL, "unknown local step kind %d", (int)s->kind);
  const long chunks = (long)((n + STEP_CHUNK - 1) / STEP_CHUNK);
  const int threads = be->threads;
  if (chunks > 1 && threads > 1) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long c = 0; c < chunks; c++) {
      const size_t lo = (size_t)c * STEP_CHUNK, hi = n - lo < STEP_CHUNK ? n : lo + STEP_CHUNK;
      step_range(s, lo, hi, p, g, m, v, extra_b);
    }
  } else { /* without entering OpenMP (vec.c, FOR_CHUNKS): the same chunks in turn */
    for (long c = 0; c < chunks; c++) {
      const size_t lo = (size_t)c * STEP_CHUNK, hi = n - lo < STEP_CHUNK ? n : lo + STEP_CHUNK;
      step_range(s, lo, hi, p, g, m, v, extra_b);
    }
  }
  return DT_OK;
}
