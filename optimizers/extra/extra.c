/* EXTRA (Shi, Ling, Wu & Yin, SIAM J. Optim. 2015), with stochastic gradients and any local
 * optimizer: x⁺ = (I + W) x − ½ (I + W) x⁻ − (d − d⁻). The round is exact.c's; README.md here. */
#include "../exact.h"
#include "../mix.h"
#include "../options_impl.h"

static const dt_key keys[] = {DT_EXACT_COMMON_KEYS, {0}};

static dt_status create(dt_optimizer_run *run, const void *opts, void *state) {
  return dt_exact_create(run, opts, DT_EXACT_EXTRA, state);
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
    DT_EXACT_DEF_COMMON,
};
