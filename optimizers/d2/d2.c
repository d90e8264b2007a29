/* D² (Tang, Lian, Yan, Zhang & Liu, ICML 2018), with any local optimizer:
 * x⁺ = W (2x − x⁻ − d + d⁻), x¹ = W (x⁰ − d⁰): NIDS's round with c = 1. The round is exact.c's;
 * README.md here. */
#include "../exact.h"
#include "../mix.h"
#include "../options_impl.h"

static const dt_key keys[] = {DT_EXACT_COMMON_KEYS, {0}};

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  dt_exact_opts o = *(const dt_exact_opts *)opts;
  o.c = 1.0;
  return dt_exact_create(run, &o, DT_EXACT_NIDS, state);
}

/* D²'s condition (Tang et al. 2018, Assumption 1): λ_min(W) > −1/3. */
static int accepts(const void *opts, const dt_run_env *env, dt_refusal *why) {
  (void)opts;
  return dt_exact_mixing_ok("d2", 1.0, env->graph, why);
}

const dt_optimizer_def dt_optimizer_d2 = {
    .plugin =
        {
            .name = "d2",
            .summary = "D2: DSGD corrected by the previous round's step, for data that differ between nodes",
            .keys = keys,
            .opts_size = sizeof(dt_exact_opts),
            .finalize = dt_exact_finalize,
        },
    DT_EXACT_DEF_COMMON,
    .accepts = accepts,
};
