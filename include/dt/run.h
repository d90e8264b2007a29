/* The experiment runner and the `check` and `compare` commands. */
#ifndef DT_RUN_H
#define DT_RUN_H

#include <stdio.h>

#include "dt/config.h"
#include "dt/exchange.h"
#include "dt/graph.h"
#include "dt/schedule.h"
#include "dt/status.h"
#include "dt/sweep.h"

/* The plug-ins of this build (every optimizer and problem), for dt_config_load and dt_config_emit. */
extern const dt_registry dt_builtin;

typedef struct dt_run_options {
  const char *output_dir;   /* exact output folder, or NULL for <output_metadir>/<time>_<name> */
  int quiet;                /* only errors and the final summary */
  const char *command_line; /* recorded in summary.yaml */
  int force;                /* --output-dir may be a folder that is not empty */
  int resume;               /* continue the run in output_dir from its checkpoint */
  int progress;             /* the live progress bar: DT_PROGRESS_AUTO (default), _ALWAYS, _NEVER */
  const char *dump_trace;   /* a folder for the run's trace (dt/trace.h, tests/twin/), or NULL */
  const char *trace_tags;   /* the records it holds ("BIDX,THET"), or NULL: all */
  /* a point of a sweep: results.sqlite lives in db_dir (NULL: the run folder), and the run's row
   * records its point and swept values */
  const char *db_dir;
  int point;                /* the point's index (with swept_json) */
  const char *swept_json;   /* {"key": "value", ...}, or NULL for a run that is not a sweep's */
  int num_swept;
  const char *const *swept_keys, *const *swept_values;
  /* a sweep: run point single_point alone (--point: one job of an array), into output_dir, which
   * every job shares; the sweep folder is made by whichever job comes first */
  int single;
  int single_point;
  /* a sweep's point: the points left after this one and the mean seconds of those this process
   * ran (0: none yet), for the overall ETA */
  int sweep_points_left;
  double sweep_seconds_per_point;
  /* `dtrun check --time`'s calibration run: per problem, the seconds of a round (its rounds after
   * the first) and of an evaluation (the first), or NULL */
  double (*calibration)[2];
  /* seconds without progress (a frozen rank, a step that hangs) after which the job ends, the
   * last checkpoint kept (experiments/watchdog.c); 0: no watchdog */
  double watchdog;
} dt_run_options;

enum { DT_PROGRESS_AUTO = 0, DT_PROGRESS_ALWAYS, DT_PROGRESS_NEVER };

/* Runs every problem of cfg (identical on all ranks). Writes the files of DESIGN.md "Files"
 * unless writeout is false. Returns DT_ERR_INTERRUPTED after SIGINT/SIGTERM (files of what was
 * measured are written, marked interrupted). Collective. */
DT_MUST_USE dt_status dt_experiment_run(dt_comm *comm, const dt_config *cfg, const dt_run_options *opt);

/* Rank 0, a completed run that `resume` has nothing left to run (opt->output_dir; a sweep point
 * with opt's db_dir and swept values): its rows in results.sqlite, rebuilt from its files where
 * the database lacks them or is damaged (a damaged one is kept as results.sqlite.damaged). */
DT_MUST_USE dt_status dt_experiment_db_repair(const dt_config *cfg, const dt_run_options *opt);


/* Whether experiment.output_metadir is (or can be made as) a writable folder: DT_ERR_CONFIG
 * naming the key otherwise. Not collective. */
DT_MUST_USE dt_status dt_output_check(const dt_config *cfg);
/* Whether folder dir can be made (with its parents when `parents`, else only its last part) or
 * written into, checked before anything is written: it, or the nearest folder above it that
 * exists, is a folder this process may write. Otherwise an error of `code` naming `what` (an
 * option or a key) and the part that stands in the way. */
DT_MUST_USE dt_status dt_folder_usable(const char *what, const char *dir, int parents, dt_status code);

/* Installs the handlers that let a run finish its round and save: SIGINT and SIGTERM checkpoint
 * and stop, SIGUSR1 checkpoints and goes on. */
void dt_run_install_signal_handlers(void);

/* What a run folder's state is: "completed", "interrupted", "diverged", "failed", "running" (its
 * lock is held by a live dtrun; holder then says who: "pid N on host H since T"), "killed" (it
 * says running, but no process holds its lock: it died without a word), or "unknown" (no
 * summary.yaml). Not collective. */
void dt_run_dir_status(const char *dir, char *status, size_t size, char *holder, size_t holder_size);
/* Describes the checkpoint in run folder dir ("problem 'x' (2 of 3) after round 40 of 100")
 * into buf; 0 when there is none. Not collective. */
int dt_run_checkpoint_describe(const char *dir, const dt_config *cfg, char *buf, size_t size);

/* `dtrun check`: prints the resolved config and a summary (graph, model, rounds) to out.
 * Builds the graph, loads and splits the data and makes the model, as run does before training,
 * so that it fails where run would. Not collective. */
DT_MUST_USE dt_status dt_experiment_check(const dt_config *cfg, FILE *out);
/* `dtrun check --time`: runs a few rounds of every problem of cfg (nothing written) on comm and
 * prints the estimated time of the whole run (points times, for a sweep of that many points). */
struct dt_comm;
DT_MUST_USE dt_status dt_experiment_time(struct dt_comm *comm, const dt_config *cfg, int points, FILE *out);

/* ---- memory (experiments/memory.c) ---- */

/* The memory a run needs per rank, in bytes, estimated before anything is allocated (the file's
 * head says what each part counts): the busiest rank's `count` nodes among `ranks`, `threads`
 * computing them. On a device backend the state, workspaces and resident training set are in the
 * device's memory, the process and the data as loaded in the host's. */
typedef struct dt_memory {
  int ranks, count, threads;
  double base, data, work, state;
  double total;    /* the host memory per rank: everything on a host backend, else base + data */
  double per_node; /* state / count */
  int problem;     /* the problem whose state is the largest */
  double limit;    /* the host memory one rank may take: the host's, shared by host_ranks ranks */
  int host_ranks;
  /* a device backend: the device memory per rank (state, workspaces and the resident training
   * set), and what one rank may take of its device (its memory shared by the ranks on it; 0:
   * not known, as in `dtrun check` on a host without the GPU) */
  double device, device_limit;
  int device_ranks;
} dt_memory;
/* What the run's backend says of memory: its pointers are host memory, else its device's size
 * (0: not known) and the host's number of devices. */
typedef struct dt_memory_backend {
  int host;
  double device_memory;
  int device_count;
} dt_memory_backend;
struct dt_data;
struct dt_optimizer_def;
/* The memory a run needs per rank with `ranks` ranks and `threads` threads per rank (training
 * uses at most one per node, evaluation all of them: dt_run_threads(comm, INT_MAX)) on the busiest
 * one (experiments/memory.c), for a run on backend `be`; limits for one rank per host. */
DT_MUST_USE dt_status dt_memory_estimate(const dt_config *cfg, const struct dt_data *data, const dt_graph *g,
                                         const dt_model *m, int ranks, int threads, dt_memory_backend be, dt_memory *out);
/* The limits of an estimate fresh from dt_memory_estimate for host_ranks ranks on each host (they
 * share its memory and its devices). */
void dt_memory_share(dt_memory *mem, int host_ranks, int device_count);
/* Whether the estimate exceeds either limit. */
int dt_memory_over(const dt_memory *mem);
/* The backend memory an algorithm allocates with options opts for dim-float parameters, on
 * `nodes` local nodes with `edges` out-edges among them (its state_size in bytes). */
double dt_memory_state_bytes(const struct dt_optimizer_def *def, const void *opts, size_t dim, double nodes, double edges);
/* bytes as "284 MB", "4.27 TB" into buf. */
const char *dt_memory_text(double bytes, char *buf, size_t size);
/* Summary lines for `dtrun check`. */
void dt_memory_print(const dt_config *cfg, const dt_memory *mem, FILE *out);
/* DT_ERR_CONFIG at experiment.model (positioned) when the estimate exceeds the host's memory. */
DT_MUST_USE dt_status dt_memory_check(const dt_config *cfg, const dt_memory *mem);

/* ---- sweeps (experiments/sweep.c) ---- */

/* Runs every point of sw (rank 0's; NULL elsewhere) into one sweep folder (opt->output_dir, or
 * <output_metadir>/<time>_<name>), or, with resume_dir, continues that sweep folder: completed
 * points are skipped, a stopped one resumed, the rest run. Every point's config is checked before
 * anything runs. Collective. */
DT_MUST_USE dt_status dt_sweep_run(dt_comm *comm, const dt_sweep *sw, const char *const *sets, int nsets, const dt_run_options *opt,
                                   const char *resume_dir);
/* `dtrun check` of a sweep file: every point loads; the first point's check, then the axes. */
DT_MUST_USE dt_status dt_sweep_check(const dt_sweep *sw, const char *const *sets, int nsets, FILE *out);
/* Whether dir is a sweep folder (it holds sweep.yaml). */
int dt_is_sweep_dir(const char *dir);
/* `dtrun check SWEEP_DIR`: each point's status and values. */
DT_MUST_USE dt_status dt_sweep_dir_status(const char *dir, FILE *out);

typedef struct dt_compare_options {
  const char *metric; /* comma-separated metrics (default top1_accuracy); the first is tabulated */
  double targets[8];  /* --target [METRIC=]X[,X...]: the --x value at which target_metric's mean reaches each */
  int num_targets;
  char target_metric[32]; /* --target's metric ("" : top1_accuracy); reached at or above X where the metric
                             rises (top-1), at or below where it falls (losses, consensus errors) */
  const char *against; /* a config key path: one row (and figure point) per value, targets against it */
  const char *where[8]; /* KEY=VALUE[,VALUE...]: only runs whose config has one of the values */
  int num_where;
  const char *x;      /* round (default), samples, bytes or seconds: the plots' x axis and what --target counts */
  const char *plot;   /* a .pdf, .svg or .png file, or NULL */
  const char *size;   /* "paper" (default: a column, panels stacked) or "slide" (16:9, panels side by side) */
  const char *facet;  /* a swept key, sweep axis or config key path: a panel per value */
  const char *labels[32]; /* KEY=TEXT: the text the figure shows for an identifier */
  int num_labels;
  const char *title;  /* the figure's title */
  const char *xlim;   /* LO:HI (either side may be empty) */
  const char *ylim[4]; /* [METRIC=]LO:HI */
  int num_ylim;
  const char *log;    /* auto (default: consensus errors and bytes on log axes), none, x, y or xy */
  const char *band;   /* over seeds: ci95 (default), sd, sem, minmax or none (a single run: its nodes' range) */
  int format;         /* DT_COMPARE_TABLE, _CSV, _MARKDOWN, _LATEX */
} dt_compare_options;

enum { DT_COMPARE_TABLE = 0, DT_COMPARE_CSV, DT_COMPARE_MARKDOWN, DT_COMPARE_LATEX };

/* `dtrun runs [DIR]`'s options. */
typedef struct dt_runs_options {
  const char *sort;     /* date (default), name, status or metric */
  const char *where[8]; /* KEY=VALUE[,VALUE...], as compare's */
  int num_where;
  int json;
} dt_runs_options;

/* `dtrun runs [DIR]`: every run and sweep folder in DIR (or DIR itself), one line each: start,
 * name, run or sweep, status now (killed included), problems completed, the best final mean
 * top-1 accuracy (or lowest validation loss) and its problem; or a JSON array. */
DT_MUST_USE dt_status dt_runs(const char *dir, const dt_runs_options *opt, FILE *out);

/* `dtrun compare DIR...`: run and sweep folders from their results.sqlite, grouped by swept
 * values (the seed aside) and problem, aggregated across seeds; optionally a figure. */
DT_MUST_USE dt_status dt_compare(const char *const *dirs, int ndirs, const dt_compare_options *opt, FILE *out);

#endif
