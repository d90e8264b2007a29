/* A sweep: every point of the grid run in turn into one folder,
 *
 *   <output_metadir>/<time>_<name>/   (or --output-dir DIR)
 *       sweep.yaml        the axes, and each point's folder and values
 *       results.sqlite    one database for every point (runs.point, runs.swept, sweep_values)
 *       000/ 001/ ...     one run folder per point, its config.yaml written before any point runs
 *
 * Each point is an ordinary run of its own config.yaml (so its files are those of running that
 * config alone), and `dtrun resume SWEEP_DIR` skips the completed points, resumes the one that
 * was stopped and runs the rest. Rank 0 reads and writes the files and hands each point's
 * config to every rank. Collective. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dt/log.h"
#include "dt/sweep.h"
#include "dt/yaml.h"
#include "dt_config.h"
#include "runner_impl.h"

static void point_folder(const dt_sweep *sw, int p, char *buf, size_t size) {
  const int width = sw->num_points > 1000 ? 4 : 3;
  snprintf(buf, size, "%0*d", width, p);
}

/* The data a point's check reads, kept for the next points that read the same: what loads it
 * (dataset, folder, the problem plug-in's options, normalisation; the seed too for generated
 * data, which it draws) is the key. */
typedef struct data_cache {
  int loaded;
  dt_data data;
  int dataset;
  char data_dir[DT_PATH_MAX];
  unsigned char problem_opts[DT_PROBLEM_OPTS_MAX];
  dt_normalize_config normalize;
  uint64_t seed;
} data_cache;

static int same_data(const data_cache *c, const dt_experiment_config *e) {
  const int seeded = strcmp(e->dataset_name, "synthetic") == 0;
  return c->loaded && c->dataset == e->dataset && strcmp(c->data_dir, e->data_dir) == 0 &&
         memcmp(c->problem_opts, e->problem_opts[e->problem_index], sizeof c->problem_opts) == 0 &&
         memcmp(&c->normalize, &e->normalize, sizeof c->normalize) == 0 && (!seeded || c->seed == e->seed);
}

/* What a point's run would refuse in its set-up, from its config and data (cached): the split,
 * augmentation of data that are not images, and the model on the data's shape. */
static dt_status check_point_model(const dt_config *cfg, data_cache *c) {
  const dt_experiment_config *e = &cfg->experiment;
  if (!same_data(c, e)) {
    dt_data_free(&c->data);
    c->loaded = 0;
    DT_TRY(dt_config_positioned(cfg, dt_data_load(e, &c->data)));
    c->loaded = 1;
    c->dataset = e->dataset;
    snprintf(c->data_dir, sizeof c->data_dir, "%s", e->data_dir);
    memcpy(c->problem_opts, e->problem_opts[e->problem_index], sizeof c->problem_opts);
    c->normalize = e->normalize;
    c->seed = e->seed;
  }
  dt_split split;
  memset(&split, 0, sizeof split);
  dt_model *m = NULL;
  dt_model_spec ms;
  const dt_status st = runner_check_setup(cfg, &c->data, &split, &ms, &m);
  dt_model_free(m);
  dt_split_free(&split);
  return st;
}

/* The warnings of every point so far (dt_config.warnings): a key without effect in some points
 * only is what a sweep over the key it depends on looks like, and is not worth a word. */
static char common[DT_CONFIG_WARNINGS_MAX];

/* Keeps the lines of common that `point` has too, the "(here: ...)" that names the point's value
 * aside. */
static void keep_common(const char *point) {
  char kept[sizeof common] = "";
  size_t used = 0;
  for (const char *w = common; *w != '\0';) {
    const char *nl = strchr(w, '\n');
    const size_t len = nl != NULL ? (size_t)(nl - w) : strlen(w);
    const char *here = strstr(w, " (here: ");
    const size_t stem = here != NULL && here < w + len ? (size_t)(here - w) : len;
    int found = 0;
    for (const char *q = point; !found && *q != '\0';) {
      found = strncmp(q, w, stem) == 0;
      const char *qn = strchr(q, '\n');
      q = qn != NULL ? qn + 1 : q + strlen(q);
    }
    if (found && used + len + 2 < sizeof kept) used += (size_t)snprintf(kept + used, sizeof kept - used, "%.*s\n", (int)len, w);
    w += len + (nl != NULL);
  }
  memcpy(common, kept, sizeof common);
}

/* Rank 0: every point's config loads, its graph can be built, its algorithms accept it, and its
 * split and model can be made, before anything runs; `common` holds the warnings every point has. */
static dt_status check_points(const dt_sweep *sw, const char *const *sets, int nsets) {
  static dt_config cfg;
  static data_cache cache;
  /* the graph of the point before, reused while the graph's keys and the seed stay (a sweep over
   * rates or algorithms builds one graph, not one per point: large graphs take seconds each) */
  dt_graph *g = NULL;
  dt_graph_config gkey;
  uint64_t gseed = 0;
  const double t0 = dt_time_now();
  double said = t0;
  for (int p = 0; p < sw->num_points; p++) {
    dt_status st = dt_sweep_point_config(sw, p, &dt_builtin, sets, nsets, &cfg);
    if (st == DT_OK && p == 0) memcpy(common, cfg.warnings, sizeof common);
    else if (st == DT_OK) keep_common(cfg.warnings);
    if (st == DT_OK && !cfg.experiment.writeout) /* a point that writes nothing could never be found done */
      st = dt_config_positioned(&cfg, DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.writeout",
                                                   "experiment.writeout: false in a sweep: each point is a run folder that "
                                                   "resume and compare read, so every point must write one"));
    const int t = cfg.experiment.graph.type; /* the graphs a seed draws */
    const uint64_t seed = t == DT_GRAPH_RANDOM || t == DT_GRAPH_REGULAR || t == DT_GRAPH_GEOMETRIC ? cfg.experiment.seed : 0;
    const int build = st == DT_OK && (g == NULL || memcmp(&gkey, &cfg.experiment.graph, sizeof gkey) != 0 || gseed != seed);
    if (build) {
      dt_graph_free(g);
      g = NULL;
      st = dt_config_positioned(&cfg, dt_graph_from_config(&cfg, &g));
      memcpy(&gkey, &cfg.experiment.graph, sizeof gkey);
      gseed = seed;
    }
    if (st == DT_OK) st = dt_optimizers_admit(&cfg, g);
    if (st == DT_OK) st = check_point_model(&cfg, &cache);
    if (st == DT_OK && p == 0) st = dt_config_positioned(&cfg, dt_output_check(&cfg));
    const double now = dt_time_now();
    dt_log_debug("sweep: point %d of %d checked%s\n", p + 1, sw->num_points, build ? ", its graph built" : "");
    if (now - said >= 5 && p + 1 < sw->num_points) { /* a long check says where it is, on stderr */
      said = now;
      fprintf(stderr, "sweep: %d of %d points checked in %.0f s (about %.0f s more)\n", p + 1, sw->num_points, now - t0,
              (now - t0) / (p + 1) * (sw->num_points - p - 1));
    }
    if (st == DT_OK && p + 1 < sw->num_points) continue;
    dt_graph_free(g);
    g = NULL;
    dt_data_free(&cache.data);
    cache.loaded = 0;
    if (st == DT_OK) continue;
    /* which point: the values that made it */
    char msg[2048], values[1024] = "";
    int idx[DT_SWEEP_MAX_AXES];
    snprintf(msg, sizeof msg, "%s", dt_error_message());
    dt_sweep_point_index(sw, p, idx);
    for (int a = 0; a < sw->num_axes; a++)
      snprintf(values + strlen(values), sizeof values - strlen(values), "%s%s=%s", a ? ", " : "", sw->axes[a].key,
               sw->axes[a].values[idx[a]].label);
    return DT_ERROR(st, "%s (sweep point %d of %d: %s)", msg, p + 1, sw->num_points, values);
  }
  return DT_OK;
}

/* Rank 0: the sweep folder, each point's folder with its config.yaml, and sweep.yaml. */
static dt_status make_sweep_dir(const dt_sweep *sw, const char *const *sets, int nsets, const dt_run_options *opt, char *dir,
                                size_t size) {
  static dt_config cfg;
  DT_TRY(dt_sweep_point_config(sw, 0, &dt_builtin, sets, nsets, &cfg));
  if (opt->output_dir != NULL) {
    DT_CHECK(strlen(opt->output_dir) < size, DT_ERR_USAGE, "--output-dir is longer than %zu characters", size - 1);
    snprintf(dir, size, "%s", opt->output_dir);
    DT_TRY(runner_mkdir_p(dir));
    char probe[DT_PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/sweep.yaml", dir);
    DT_CHECK(access(probe, F_OK) != 0 || opt->force, DT_ERR_USAGE,
             "--output-dir %s holds a sweep already: continue it with dtrun resume %s, or add --force to start it again", dir, dir);
  } else {
    DT_TRY(runner_stamped_folder(cfg.experiment.output_metadir, cfg.experiment.name, dir, size));
  }
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  DT_CHECK(mem != NULL, DT_ERR_MEMORY, "out of memory");
  fprintf(mem, "# dtrun sweep: one run folder per point; dtrun resume continues it, dtrun compare tabulates it\n");
  dt_yemit *y = NULL;
  dt_status st = dt_yemit_begin(mem, &y);
  if (st == DT_OK) {
    dt_yemit_map(y, 0);
    dt_yemit_scalar(y, "dtrun_version", 0), dt_yemit_str(y, DT_VERSION);
    dt_yemit_scalar(y, "source", 0), dt_yemit_str(y, sw->source);
    dt_yemit_scalar(y, "command", 0), dt_yemit_str(y, opt->command_line != NULL ? opt->command_line : "");
    dt_yemit_scalar(y, "points", 0), dt_yemit_int(y, sw->num_points);
    dt_yemit_scalar(y, "axes", 0);
    dt_yemit_seq(y, 0);
    for (int a = 0; a < sw->num_axes; a++) {
      dt_yemit_map(y, 0);
      dt_yemit_scalar(y, "key", 0), dt_yemit_str(y, sw->axes[a].key);
      dt_yemit_scalar(y, "values", 0);
      dt_yemit_seq(y, 1);
      for (int i = 0; i < sw->axes[a].num_values; i++) dt_yemit_scalar(y, sw->axes[a].values[i].label, 1);
      dt_yemit_end(y);
      dt_yemit_end(y);
    }
    dt_yemit_end(y);
    dt_yemit_scalar(y, "runs", 0);
    dt_yemit_seq(y, 0);
  }
  for (int p = 0; p < sw->num_points && st == DT_OK; p++) {
    char name[16], sub[DT_PATH_MAX + 96];
    int idx[DT_SWEEP_MAX_AXES];
    point_folder(sw, p, name, sizeof name);
    dt_sweep_point_index(sw, p, idx);
    dt_yemit_map(y, 0);
    dt_yemit_scalar(y, "point", 0), dt_yemit_int(y, p);
    dt_yemit_scalar(y, "folder", 0), dt_yemit_scalar(y, name, 1);
    dt_yemit_scalar(y, "values", 0);
    dt_yemit_map(y, 1); /* text, as the axes' values: a reader compares them as written */
    for (int a = 0; a < sw->num_axes; a++) dt_yemit_str(y, sw->axes[a].key), dt_yemit_scalar(y, sw->axes[a].values[idx[a]].label, 1);
    dt_yemit_end(y);
    dt_yemit_end(y);
    snprintf(sub, sizeof sub, "%s/%s", dir, name);
    st = dt_sweep_point_config(sw, p, &dt_builtin, sets, nsets, &cfg);
    if (st == DT_OK) st = runner_mkdir_p(sub);
    if (st == DT_OK) st = dt_write_emitted(sub, "config.yaml", runner_emit_config, &cfg);
  }
  if (y != NULL) {
    const dt_status fin = dt_yemit_finish(y, "sweep.yaml");
    if (st == DT_OK) st = fin;
  }
  fclose(mem);
  if (st == DT_OK) st = dt_write_atomic(dir, "sweep.yaml", text, len);
  free(text);
  return st;
}

/* sweep.yaml as read back (rank 0): each point's folder and swept values. */
typedef struct sweep_index {
  dt_ynode *root;
  const dt_ynode *runs;
  int num_points;
} sweep_index;

static dt_status read_index(const char *dir, sweep_index *ix) {
  char path[DT_PATH_MAX + 32];
  size_t len;
  memset(ix, 0, sizeof *ix);
  snprintf(path, sizeof path, "%s/sweep.yaml", dir);
  char *text = dt_read_file(path, &len);
  DT_CHECK(text != NULL, DT_ERR_USAGE, "%s: not a sweep folder (cannot read sweep.yaml: %s)", dir, strerror(errno));
  dt_status st = dt_yaml_parse(text, len, path, &ix->root);
  free(text);
  DT_TRY(st);
  ix->runs = dt_ynode_get(ix->root, "runs");
  DT_CHECK(ix->runs != NULL && ix->runs->kind == DT_YN_SEQ && ix->runs->n > 0, DT_ERR_DATA, "%s: no runs: list", path);
  for (int i = 0; i < ix->runs->n; i++) {
    const dt_ynode *f = dt_ynode_get(ix->runs->items[i], "folder"), *v = dt_ynode_get(ix->runs->items[i], "values");
    DT_CHECK(f != NULL && f->kind == DT_YN_SCALAR && dt_config_file_name_ok(f->text) && v != NULL && v->kind == DT_YN_MAP, DT_ERR_DATA,
             "%s:%d: each run needs a folder: and values:", path, ix->runs->items[i]->line);
  }
  ix->num_points = ix->runs->n;
  return DT_OK;
}

/* What rank 0 decided for a point, sent to every rank. */
enum { POINT_RUN = 1, POINT_RESUME, POINT_SKIP, POINT_FAILED };

/* Rank 0: the point's action, config and run options (swept values kept in the arrays). */
static dt_status plan_point(const sweep_index *ix, const char *dir, int p, int resume, dt_config *cfg, char *folder, size_t size,
                            int *action, char *json, size_t json_size, const char **keys, const char **values) {
  const dt_ynode *run = ix->runs->items[p], *vals = dt_ynode_get(run, "values");
  snprintf(folder, size, "%s/%s", dir, dt_ynode_get(run, "folder")->text);
  strbuf js = {0};
  sb_printf(&js, "{");
  for (int k = 0; k < vals->n && k < DT_SWEEP_MAX_AXES; k++) {
    keys[k] = vals->keys[k]->text;
    values[k] = vals->items[k]->kind == DT_YN_SCALAR ? vals->items[k]->text : "";
    sb_printf(&js, "%s", k ? ", " : "");
    sb_yaml_string(&js, keys[k]);
    sb_printf(&js, ": ");
    sb_yaml_string(&js, values[k]);
  }
  sb_printf(&js, "}");
  const int fits = !js.failed && js.len < json_size;
  if (fits) memcpy(json, js.data, js.len + 1);
  sb_free(&js);
  DT_CHECK(fits, DT_ERR_DATA, "%s: the swept values of point %d are longer than %zu characters", dir, p, json_size - 1);
  char status[64], holder[512], path[DT_PATH_MAX + 128];
  dt_run_dir_status(folder, status, sizeof status, holder, sizeof holder);
  *action = POINT_RUN;
  if (resume && strcmp(status, "completed") == 0) *action = POINT_SKIP;
  else if (resume && strcmp(status, "unknown") != 0) *action = POINT_RESUME;
  if (*action != POINT_SKIP) DT_CHECK(strcmp(status, "running") != 0, DT_ERR_USAGE, "%s is still running (%s)", folder, holder);
  snprintf(path, sizeof path, "%s/config.yaml", folder);
  const dt_status st = dt_config_load(path, &dt_builtin, NULL, 0, cfg);
  if (st == DT_OK || *action != POINT_SKIP) return st;
  dt_log_warn("%s: its rows in results.sqlite were not checked: %s", folder, dt_error_message());
  cfg->num_problems = -1; /* a completed point whose config no longer loads: nothing to repair with */
  return DT_OK;
}

/* A sweep being run: what every rank learns of it (the folder, the number of points), rank 0's
 * index, and the current point's config, folder and swept values. */
typedef struct sweep_run {
  dt_comm *comm;
  int rank, num_points;
  const dt_run_options *opt;
  const char *resume_dir; /* NULL: a new sweep */
  sweep_index ix;         /* rank 0 */
  dt_config cfg;
  char dir[DT_PATH_MAX + 64], folder[DT_PATH_MAX + 96];
  char json[4096];
  const char *keys[DT_SWEEP_MAX_AXES], *values[DT_SWEEP_MAX_AXES]; /* rank 0 */
  int points_left;     /* to run after the current one (the ETA's; points found completed then are not skipped from it) */
  double point_seconds; /* mean seconds of the points this process ran (0: none yet) */
} sweep_run;

/* Rank 0, one point of an array (--point): the sweep folder every job shares, made by the first
 * job under a lock (DIR/sweep.lock), or, made already, checked to be this sweep's (the same
 * points with the same values). */
static dt_status shared_sweep_dir(const dt_sweep *sw, const char *const *sets, int nsets, const dt_run_options *opt, char *dir,
                                  size_t size) {
  char lock[DT_PATH_MAX + 32], probe[DT_PATH_MAX + 32];
  DT_CHECK(strlen(opt->output_dir) < size, DT_ERR_USAGE, "--output-dir is longer than %zu characters", size - 1);
  snprintf(dir, size, "%s", opt->output_dir);
  DT_TRY(runner_mkdir_p(dir));
  snprintf(lock, sizeof lock, "%s/sweep.lock", dir);
  const int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  DT_CHECK(fd >= 0, DT_ERR_IO, "cannot open %s: %s", lock, strerror(errno));
  dt_status st = DT_OK;
  if (flock(fd, LOCK_EX) != 0) st = DT_ERROR(DT_ERR_IO, "cannot lock %s: %s", lock, strerror(errno));
  snprintf(probe, sizeof probe, "%s/sweep.yaml", dir);
  if (st == DT_OK && access(probe, F_OK) != 0) {
    dt_run_options made = *opt;
    made.force = 1; /* the folder may hold the lock file alone */
    st = check_points(sw, sets, nsets);
    if (st == DT_OK) st = make_sweep_dir(sw, sets, nsets, &made, dir, size);
  } else if (st == DT_OK) { /* another job made it: the same sweep? */
    sweep_index ix;
    st = read_index(dir, &ix);
    if (st == DT_OK && ix.num_points != sw->num_points)
      st = DT_ERROR(DT_ERR_USAGE, "%s holds another sweep (%d points, this one has %d)", dir, ix.num_points, sw->num_points);
    for (int p = 0; st == DT_OK && p < sw->num_points; p++) {
      int idx[DT_SWEEP_MAX_AXES];
      dt_sweep_point_index(sw, p, idx);
      const dt_ynode *vals = dt_ynode_get(ix.runs->items[p], "values");
      for (int a = 0; st == DT_OK && a < sw->num_axes; a++) {
        const dt_ynode *v = dt_ynode_get(vals, sw->axes[a].key);
        if (v == NULL || v->kind != DT_YN_SCALAR || strcmp(v->text, sw->axes[a].values[idx[a]].label) != 0)
          st = DT_ERROR(DT_ERR_USAGE, "%s holds another sweep (its point %d has %s = %s, this one's %s)", dir, p, sw->axes[a].key,
                        v != NULL && v->kind == DT_YN_SCALAR ? v->text : "nothing", sw->axes[a].values[idx[a]].label);
      }
    }
    /* and each point's config.yaml is what this job's sweep makes of it (the same file, --set and
     * --sweep as the job that made the folder) */
    static dt_config cfg;
    for (int p = 0; st == DT_OK && p < sw->num_points; p++) {
      char *mine = NULL, *theirs = NULL, name[16], path[DT_PATH_MAX + 64];
      size_t mlen = 0, tlen = 0;
      st = dt_sweep_point_config(sw, p, &dt_builtin, sets, nsets, &cfg);
      FILE *mem = st == DT_OK ? open_memstream(&mine, &mlen) : NULL;
      if (st == DT_OK && mem == NULL) st = DT_ERROR(DT_ERR_MEMORY, "out of memory");
      if (mem != NULL) {
        st = runner_emit_config(&cfg, mem);
        fclose(mem);
      }
      point_folder(sw, p, name, sizeof name);
      snprintf(path, sizeof path, "%s/%s/config.yaml", dir, name);
      if (st == DT_OK) theirs = dt_read_file_bounded(path, 1 << 24, &tlen);
      if (st == DT_OK && (theirs == NULL || tlen != mlen || memcmp(theirs, mine, mlen) != 0))
        st = DT_ERROR(DT_ERR_USAGE, "%s holds another sweep: its %s differs from this job's point %d (another file, --set or --sweep)",
                      dir, path, p);
      free(mine);
      free(theirs);
    }
    dt_ynode_free(ix.root);
  }
  close(fd); /* and the lock with it */
  return st;
}

/* Rank 0 makes the sweep folder (or takes the one resumed) and reads its index; every rank
 * learns the folder and the number of points, or fails with rank 0's reason. */
static dt_status open_sweep(sweep_run *sr, const dt_sweep *sw, const char *const *sets, int nsets) {
  dt_status st = DT_OK;
  double head[2] = {0, 0}; /* ok, points */
  if (sr->rank == 0) {
    if (sr->resume_dir != NULL) {
      snprintf(sr->dir, sizeof sr->dir, "%s", sr->resume_dir);
    } else if (sr->opt->single) {
      st = shared_sweep_dir(sw, sets, nsets, sr->opt, sr->dir, sizeof sr->dir);
    } else {
      st = check_points(sw, sets, nsets);
      if (st == DT_OK) runner_print_warnings(common, NULL); /* once, not at every point */
      if (st == DT_OK) st = make_sweep_dir(sw, sets, nsets, sr->opt, sr->dir, sizeof sr->dir);
    }
    if (st == DT_OK) st = read_index(sr->dir, &sr->ix);
    head[0] = st == DT_OK;
    head[1] = sr->ix.num_points;
  }
  const dt_status setup_st = st; /* rank 0's reason, which the broadcast's status would overwrite */
  DT_TRY(dt_comm_bcast(sr->comm, head, sizeof head, 0));
  if (head[0] != 1) {
    st = setup_st;
    if (st == DT_OK) st = DT_ERROR(DT_ERR_CONFIG, "rank 0 could not set up the sweep");
    return st;
  }
  DT_TRY(dt_comm_bcast(sr->comm, sr->dir, sizeof sr->dir, 0));
  sr->num_points = (int)head[1];
  return DT_OK;
}

/* Rank 0 plans point p; every rank learns its action (POINT_RUN, _RESUME or _SKIP) and, for a
 * point to run, its config and folder, or fails with rank 0's reason. */
static dt_status share_point(sweep_run *sr, int p, int *action) {
  dt_status st = DT_OK;
  double act = POINT_FAILED;
  if (sr->rank == 0) {
    int a = 0;
    st = plan_point(&sr->ix, sr->dir, p, sr->resume_dir != NULL || sr->opt->single, &sr->cfg, sr->folder, sizeof sr->folder, &a, sr->json,
                    sizeof sr->json, sr->keys, sr->values);
    act = st == DT_OK ? a : POINT_FAILED;
  }
  const dt_status plan_st = st;
  DT_TRY(dt_comm_bcast(sr->comm, &act, sizeof act, 0));
  if (act == POINT_FAILED) {
    st = plan_st;
    if (st == DT_OK) st = DT_ERROR(DT_ERR_CONFIG, "rank 0 could not load point %d of the sweep", p);
    return st;
  }
  *action = (int)act;
  if (*action == POINT_SKIP) return DT_OK;
  DT_TRY(dt_comm_bcast(sr->comm, &sr->cfg, sizeof sr->cfg, 0));
  DT_TRY(dt_comm_bcast(sr->comm, sr->folder, sizeof sr->folder, 0));
  return DT_OK;
}

/* Rank 0's heading of a point: its folder and swept values. */
static void announce_point(const sweep_run *sr, int p, int action) {
  if (sr->rank != 0 || sr->opt->quiet) return;
  printf("\n== sweep point %d of %d (%s):", p + 1, sr->num_points, strrchr(sr->folder, '/') + 1);
  const dt_ynode *vals = dt_ynode_get(sr->ix.runs->items[p], "values");
  for (int k = 0; k < vals->n; k++) printf(" %s=%s", sr->keys[k], sr->values[k]);
  printf("%s", action == POINT_RESUME ? " (resumed)" : "");
  if (sr->point_seconds > 0) printf("; about %s left of the sweep", runner_clock_text((sr->num_points - p) * sr->point_seconds));
  printf("\n");
  fflush(stdout);
}

static int opt_single(const sweep_run *sr) { return sr->opt->single; }

/* The run options of point p: its folder, recorded in the sweep's database with its values. */
static dt_run_options point_options(const sweep_run *sr, int p, int action) {
  dt_run_options ro = *sr->opt;
  ro.output_dir = sr->folder;
  ro.force = action == POINT_RUN; /* the folder holds its config.yaml */
  ro.resume = action == POINT_RESUME || action == POINT_SKIP;
  ro.db_dir = sr->dir;
  ro.point = p;
  ro.swept_json = sr->json;
  ro.num_swept = sr->rank == 0 ? dt_ynode_get(sr->ix.runs->items[p], "values")->n : 0;
  ro.swept_keys = sr->keys;
  ro.swept_values = sr->values;
  ro.sweep_points_left = opt_single(sr) ? 0 : sr->points_left;
  ro.sweep_seconds_per_point = sr->point_seconds;
  return ro;
}

/* Point p as an ordinary run of its folder (resumed, or over the config.yaml already there),
 * recorded in the sweep's database; an interrupt says how to continue the sweep. */
static dt_status run_point(sweep_run *sr, int p, int action) {
  const dt_run_options ro = point_options(sr, p, action);
  sr->cfg.warnings[0] = '\0'; /* the keys' warnings common to every point were said at the sweep's start */
  dt_status st = dt_experiment_run(sr->comm, &sr->cfg, &ro);
  if (st == DT_ERR_DIVERGED) st = DT_OK; /* a point whose problems all diverged is a result of the sweep, marked in its rows */
  if (st == DT_ERR_INTERRUPTED) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dt_error_message());
    st = DT_ERROR(DT_ERR_INTERRUPTED, "sweep point %d of %d: %s; continue the sweep with: dtrun resume %s", p + 1, sr->num_points,
                  msg, sr->dir);
  }
  return st;
}

dt_status dt_sweep_run(dt_comm *comm, const dt_sweep *sw, const char *const *sets, int nsets, const dt_run_options *opt,
                       const char *resume_dir) {
  static sweep_run sr; /* static: a config is large */
  memset(&sr, 0, sizeof sr);
  sr.comm = comm;
  sr.rank = dt_comm_rank(comm);
  sr.opt = opt;
  sr.resume_dir = resume_dir;
  dt_status st = DT_OK;
  DT_TRY_GOTO(open_sweep(&sr, sw, sets, nsets));
  DT_CHECK_GOTO(!opt->single || opt->single_point < sr.num_points, DT_ERR_USAGE, "--point %d: the sweep in %s has points 0 to %d",
                opt->single_point, sr.dir, sr.num_points - 1);
  if (sr.rank == 0 && !opt->quiet && opt->single)
    printf("sweep: point %d of the %d in %s\n", opt->single_point, sr.num_points, sr.dir);
  else if (sr.rank == 0 && !opt->quiet)
    printf("sweep: %d point%s in %s%s\n", sr.num_points, sr.num_points == 1 ? "" : "s", sr.dir,
           resume_dir != NULL ? " (resuming)" : "");
  int done = 0, skipped = 0;
  for (int p = opt->single ? opt->single_point : 0; p < (opt->single ? opt->single_point + 1 : sr.num_points); p++) {
    int action = POINT_FAILED;
    DT_TRY_GOTO(share_point(&sr, p, &action));
    if (action == POINT_SKIP) { /* completed: its rows are in the database, or rebuilt there */
      skipped++;
      if (sr.rank == 0 && sr.cfg.num_problems >= 0) { /* best effort: a point's rows do not stop the sweep */
        const dt_run_options ro = point_options(&sr, p, action);
        if (dt_experiment_db_repair(&sr.cfg, &ro) != DT_OK)
          dt_log_warn("%s: its rows in results.sqlite were not checked: %s", sr.folder, dt_error_message());
      }
      continue;
    }
    announce_point(&sr, p, action);
    sr.points_left = sr.num_points - p - 1;
    const double t0 = dt_time_now();
    DT_TRY_GOTO(run_point(&sr, p, action));
    done++;
    sr.point_seconds += (dt_time_now() - t0 - sr.point_seconds) / done; /* the running mean */
  }
  if (sr.rank == 0)
    printf("\nsweep: %d point%s run%s%s in %s; tabulate with: dtrun compare %s\n", done, done == 1 ? "" : "s",
           skipped ? ", completed before: " : "", skipped ? (snprintf(sr.json, sizeof sr.json, "%d", skipped), sr.json) : "", sr.dir,
           sr.dir);
cleanup:
  dt_ynode_free(sr.ix.root);
  return st;
}

dt_status dt_sweep_check(const dt_sweep *sw, const char *const *sets, int nsets, FILE *out) {
  DT_TRY(check_points(sw, sets, nsets));
  static dt_config cfg;
  DT_TRY(dt_sweep_point_config(sw, 0, &dt_builtin, sets, nsets, &cfg));
  memcpy(cfg.warnings, common, sizeof cfg.warnings); /* what every point has, not the first point's own */
  DT_TRY(dt_experiment_check(&cfg, out));
  fprintf(out, "\nsweep: %d points over %d ax%s (the first point is shown above; every point loads):\n", sw->num_points, sw->num_axes,
          sw->num_axes == 1 ? "is" : "es");
  for (int a = 0; a < sw->num_axes; a++) {
    fprintf(out, "  %s:", sw->axes[a].key);
    for (int i = 0; i < sw->axes[a].num_values; i++) fprintf(out, " %s", sw->axes[a].values[i].label);
    fprintf(out, "\n");
  }
  return DT_OK;
}

int dt_is_sweep_dir(const char *dir) {
  char path[DT_PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/sweep.yaml", dir);
  return access(path, R_OK) == 0;
}

dt_status dt_sweep_dir_status(const char *dir, FILE *out) {
  sweep_index ix;
  DT_TRY(read_index(dir, &ix));
  int completed = 0;
  fprintf(out, "%s: a sweep of %d points\n", dir, ix.num_points);
  for (int p = 0; p < ix.num_points; p++) {
    const dt_ynode *run = ix.runs->items[p], *vals = dt_ynode_get(run, "values");
    char folder[DT_PATH_MAX + 96], status[64], holder[512];
    snprintf(folder, sizeof folder, "%s/%s", dir, dt_ynode_get(run, "folder")->text);
    dt_run_dir_status(folder, status, sizeof status, holder, sizeof holder);
    if (strcmp(status, "unknown") == 0) snprintf(status, sizeof status, "not started");
    completed += strcmp(status, "completed") == 0;
    fprintf(out, "  %s  %-11s", dt_ynode_get(run, "folder")->text, status);
    for (int k = 0; k < vals->n; k++) fprintf(out, " %s=%s", vals->keys[k]->text, vals->items[k]->text);
    fprintf(out, "\n");
  }
  if (completed < ix.num_points) fprintf(out, "  continue with: dtrun resume %s\n", dir);
  dt_ynode_free(ix.root);
  return DT_OK;
}
