/* The output folder: --output-dir exactly, or <output_metadir>/<time>_<name>, with _2, _3, ...
 * when that exists already (two runs started in the same second). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runner_impl.h"

static dt_status mkdir_p(const char *path) {
  char buf[DT_PATH_MAX + 64];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return DT_ERROR(DT_ERR_IO, "cannot create folder %s: %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) return DT_ERROR(DT_ERR_IO, "cannot create folder %s: %s", buf, strerror(errno));
  return DT_OK;
}

dt_status runner_make_outdir(runner *r) {
  const dt_experiment_config *e = &r->cfg->experiment;
  dt_status st = DT_OK;
  if (r->rank == 0) {
    if (r->opt->output_dir != NULL) {
      snprintf(r->outdir, sizeof r->outdir, "%s", r->opt->output_dir);
      st = mkdir_p(r->outdir);
    } else {
      char stamp[64];
      time_t now = time(NULL);
      struct tm tmv;
      localtime_r(&now, &tmv);
      strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", &tmv);
      st = mkdir_p(e->output_metadir);
      for (int k = 1; st == DT_OK; k++) {
        if (k == 1) snprintf(r->outdir, sizeof r->outdir, "%s/%s_%s", e->output_metadir, stamp, e->name);
        else snprintf(r->outdir, sizeof r->outdir, "%s/%s_%s_%d", e->output_metadir, stamp, e->name, k);
        if (mkdir(r->outdir, 0777) == 0) break;
        if (errno != EEXIST) st = DT_ERROR(DT_ERR_IO, "cannot create folder %s: %s", r->outdir, strerror(errno));
      }
    }
  }
  /* every rank learns the outcome, so a failure stops all of them together */
  double ok = st == DT_OK ? 1 : 0;
  DT_TRY(dt_comm_allreduce_min_f64(r->comm, &ok, 1));
  if (st != DT_OK) return st;
  DT_CHECK(ok == 1, DT_ERR_IO, "rank 0 could not create the output folder");
  return DT_OK;
}
