/* NIDS (Li, Shi & Yan, IEEE TSP 2019), with stochastic gradients and any local optimizer:
 * x⁺ = W̃ (2x − x⁻ − d + d⁻), W̃ = I − c (I − W); c = 1/2 is exact diffusion's (I + W)/2. The round
 * is exact.c's; README.md here. */
#include <stdio.h>

#include "../exact.h"
#include "../mix.h"
#include "../options_impl.h"

static const dt_key keys[] = {
    DT_EXACT_COMMON_KEYS,
    {.name = "c", .type = DT_KEY_FLOAT, .offset = offsetof(dt_exact_opts, c), .def = "0.5", .min = 0, .max = 1,
     .help = "the mixing matrix W~ = I - c (I - W): 0.5 is exact diffusion's (I + W)/2 (converges for every "
             "symmetric doubly stochastic W), 1 is D2's W (needs its smallest eigenvalue above -1/3)"},
    {0},
};

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  return dt_exact_create(run, opts, DT_EXACT_NIDS, state);
}

static int finalize(void *opts, int rounds, char *err, size_t err_size) {
  if (((const dt_exact_opts *)opts)->c <= 0) {
    snprintf(err, err_size, "nids's c must be > 0 (c = 0 never mixes)");
    return 0;
  }
  return dt_exact_finalize(opts, rounds, err, err_size);
}

static int accepts(const void *opts, const dt_run_env *env, dt_refusal *why) {
  return dt_exact_mixing_ok("nids", ((const dt_exact_opts *)opts)->c, env->graph, why);
}

const dt_optimizer_def dt_optimizer_nids = {
    .plugin =
        {
            .name = "nids",
            .summary = "NIDS / exact diffusion: the corrected step mixed with W~ = I - c (I - W)",
            .keys = keys,
            .opts_size = sizeof(dt_exact_opts),
            .finalize = finalize,
        },
    DT_EXACT_DEF_COMMON,
    .accepts = accepts,
};
