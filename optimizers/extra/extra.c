/* EXTRA (Shi, Ling, Wu & Yin, SIAM J. Optim. 2015), with stochastic gradients and any local
 * optimizer: x⁺ = (I + W) x − ½ (I + W) x⁻ − (d − d⁻). The round is exact.c's; README.md here. */
#include "../exact.h"
#include "../mix.h"
#include "../options_impl.h"

static const dt_key keys[] = {DT_EXACT_COMMON_KEYS, {0}};

static dt_status create(dt_optimizer_run *run, const void *opts, void **out) {
  return dt_exact_create(run, opts, DT_EXACT_EXTRA, out);
}

const dt_optimizer_def dt_optimizer_extra = {
    .plugin =
        {
            .name = "extra",
            .summary = "EXTRA: exact first-order decentralized method, a correction by the previous round",
            .keys = keys,
            .opts_size = sizeof(dt_exact_opts),
            .finalize = dt_exact_finalize,
        },
    .create = create,
    .round = dt_exact_round,
    .destroy = dt_exact_destroy,
    .bytes_per_round = dt_mix_one_vector_bytes,
    .traffic_per_edge = 1,
    .gradient_step = dt_exact_gradient_step,
    .state_size = dt_exact_state_size,
    .on_missing = DT_MISSING_RENORMALISE,
};
