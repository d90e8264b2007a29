/* The runner's parts (experiments/), one concern per file:
 *   run.c       the experiment: set-up, the problems in turn, each problem's round loop, and the
 *               seed format's individual_training through the solo plug-in
 *   evaluate.c  an evaluation: every node's metrics, consensus, rows assembled on rank 0
 *   results.c   result files: config/graph/split, per-problem CSVs, summary.yaml, models
 *   outdir.c    the output folder
 *   progress.c  what the terminal shows (rank 0 only)
 *   signals.c   SIGINT/SIGTERM: the round finishes, what was measured is saved
 *   writer.c    text buffers, atomic writes, .npy
 *   checkpoint.c  run.ckpt and the nodes' checkpoints: writing, reading, resuming
 *   db.c        results.sqlite: runs, problems, evaluations
 *   sweep.c     a sweep's grid of points into one folder and one database
 *   check.c, compare*.c, main.c   the commands (dtrun check, compare, the command line) */
#ifndef DT_RUNNER_IMPL_H
#define DT_RUNNER_IMPL_H

#include <pthread.h>

#include "dt/optimizer.h"
#include "dt/run.h"
#include "dt/timer.h"
#include "writer_impl.h"

/* Per-node columns of an evaluation, in file order. */
enum {
  COL_FPC, COL_VLOSS, COL_ACC, COL_CONS, COL_CONS_RAW, COL_EPOCH, COL_TRAIN_LOSS, COL_BYTES,
  COL_T_COMPUTE, COL_T_COMM, COL_T_EVAL, COL_SIM_TIME, COL_MSG_SENT, COL_MSG_LOST, COL_MSG_RECEIVED, NCOL
};
extern const char *const runner_col_names[NCOL];
/* Whether column c is recorded for a problem with these metric bits. */
int runner_col_enabled(int c, unsigned metrics);

typedef struct problem_result {
  const char *status; /* completed | interrupted | diverged */
  int rounds_done;
  int diverged_round; /* > 0: the round after which a loss was NaN or infinite */
  double final[NCOL][3]; /* min, mean, max over nodes at the last evaluation */
  double seconds, t_compute, t_comm, t_eval;
  double bytes;         /* all nodes */
} problem_result;

/* A TensorBoard event file being written (rank 0): NULL f when there is none, or it failed. */
typedef struct tb_file {
  FILE *f;
  char path[DT_PATH_MAX + 512];
} tb_file;

typedef struct runner {
  dt_comm *comm;
  const dt_config *cfg;
  const dt_run_options *opt;
  int rank, size, first, count, n;
  dt_graph *graph;
  dt_schedule *schedule; /* time-varying graph, or NULL */
  dt_network *net;       /* experiment.network's simulated clock, or NULL */
  dt_faults *faults;     /* experiment.network's loss, link failures and churn, or NULL */
  dt_data data; /* the train and test samples */
  dt_split split;
  dt_backend *be;
  dt_backend *host; /* the CPU backend for rank 0's host-side math */
  dt_task *task;
  dt_data_file files[10];  /* the data's files and digests, then the inputs', for summary.yaml (rank 0, once) */
  int num_files;           /* -1: not hashed yet; read only after runner_files_end */
  pthread_t files_thread;  /* hashing them beside the set-up (runner_files_begin) */
  int files_pending;
  float *theta0;           /* host */
  dt_batch_order order;    /* experiment.batch_order (num_nodes 0: none) */
  dt_data_file inputs[2];  /* the digests of experiment.model.init_file and batch_order, for summary.yaml */
  int num_inputs;
  dt_slab normed;          /* θ/‖θ‖ of the local nodes */
  double *rows, *all_rows; /* count × NCOL, n × NCOL */
  double *mean_raw, *mean_norm; /* ordered sums over all nodes (backend memory) */
  float *mean_model;             /* evaluation.nodes mean: the average parameters, */
  double *mean_buf_sum;          /* ... the buffers' sum over all nodes */
  float *mean_buf;               /* ... and their average (backend memory; NULL without buffers) */
  uint32_t *eval_rank;           /* [n] each node's place in the seed's draw: evaluation.sample K evaluates
                                    the nodes placed below K */
  char outdir[DT_PATH_MAX + 64];
  int write; /* rank 0 and writeout */
  int tty;
  double t_start;
  double t_phase; /* when the set-up phase in progress began (setup_phase) */
  char warnings[2048]; /* rank 0: runner_setup_warnings' lines, printed with the banner */
  char started[64];
  problem_result res[DT_MAX_PROBLEMS];
  uint64_t config_hash; /* of the resolved config's text: a checkpoint belongs to one config */
  int write_ckpt;       /* writeout (checkpoints live in the run folder) */
  double last_ckpt, ckpt_seconds; /* this process's checkpoints: when the last, time spent in all */
  int num_ckpt;
  int lock_fd;          /* rank 0: the run folder's lock (runner_lock), or -1 */
  struct runner_watchdog *watchdog; /* --watchdog's thread (watchdog.c), or NULL */
  /* results.sqlite (db.c; rank 0 of a writing run) */
  struct sqlite3 *db;
  struct sqlite3_stmt *db_eval, *db_problem;
  char db_dir[DT_PATH_MAX + 64]; /* the database's folder: the run folder, or its sweep's */
  long long db_run;              /* this run's row in `runs` */
  int db_failed;                 /* a write failed: reported when the problem's files are written */
  int db_rebuilt;                /* resumed without this run's rows: rebuilt from its files */
  char db_error[1024];
  /* experiment.tensorboard (tensorboard.c; rank 0 of a writing run): the problem's event file */
  /* the overall ETA: the rounds this process ran of finished problems and their seconds (rounds,
   * evaluations and setup of each problem) */
  double eta_rounds, eta_seconds;
  tb_file tb, tb_train;     /* the problem's TensorBoard run, and its <problem>/train run (train_loss_recent) */
  double *tb_loss_sum;     /* [count] each local node's training-loss totals at the last train_loss_recent */
  long *tb_loss_n;
} runner;

/* One problem in progress: the optimizer's run context and the result text being collected. */
typedef struct problem_run {
  dt_optimizer_run *run; /* the plug-in's run context (dt_run_create) */
  const dt_problem_config *pc;
  int index; /* in cfg->problems */
  dt_timer t_eval;
  double t_start;
  double *round_seconds; /* profile: each round's wall time on this rank */
  dt_profile prof;       /* profile: the phases of this problem's rounds on this rank */
  int rounds_run;        /* the rounds finished, counted from 0 (every rank) */
  double t_first, t_last; /* calibration: the end of the first round and of the last (before its evaluation) */
  strbuf csv, consensus_csv;
  int cols[NCOL];
} problem_run;

/* Where a resumed run continues (checkpoint.c): problem `problem` at round `round` (0: from its
 * start, the problems before it done), with what rank 0 read. */
typedef struct resume_point {
  int found;
  int problem, round;
  int checked; /* its files end in checksum trailers (format 3) */
  char dir[DT_PATH_MAX + 96];
  double t_compute, t_comm, t_eval, seconds;
  strbuf csv, consensus_csv; /* rank 0 */
  unsigned char *shared;     /* the optimizer's replicated state, every rank */
  size_t shared_size;
} resume_point;

/* results.c. The experiment's part of a trace into dir (rank 0): the resolved config.yaml,
 * graph.yaml, the model's layer list (model.json) and manifest (manifest.tsv). */
DT_MUST_USE dt_status runner_write_trace_setup(runner *r, const char *dir);
/* What a run's set-up refuses of cfg on its data, with the same positioned messages (`check`, a
 * sweep's pre-check of every point): the split (into split), augmentation of data that are not
 * images, the model on the data's shape (spec into ms, built into m). The caller frees split and
 * m, also on failure. */
/* What set-up finds inert or doubtful beyond the keys themselves (those are dt_config.warnings):
 * an evaluation.test_samples above the test set's size, a churn (node_up_rounds) after which no
 * node is online to the end. Lines "FILE:LINE:COL: key: what\n" into buf. */
DT_MUST_USE dt_status runner_setup_warnings(const dt_config *cfg, const dt_data *data, const dt_graph *g, char *buf, size_t size);
/* Warning lines as "# warning: LINE" to out (check), or through dt_log_warn when out is NULL. */
void runner_print_warnings(const char *lines, FILE *out);
DT_MUST_USE dt_status runner_check_setup(const dt_config *cfg, const dt_data *data, dt_split *split, dt_model_spec *ms, dt_model **m);
/* experiment.batch_order, read and checked against the split and every problem (a full-batch
 * problem takes no minibatches; each problem's batch must hold the widest step); nothing without
 * one. Errors positioned at the key. */
DT_MUST_USE dt_status runner_batch_order(const dt_config *cfg, const dt_split *split, size_t train_count, dt_batch_order *out);
/* experiment.model.init_file into params and buffers (NULL without), its digest into sha256;
 * nothing without one. */
DT_MUST_USE dt_status runner_init_weights(const dt_config *cfg, const dt_model *m, float *params, float *buffers, char sha256[65]);

/* evaluate.c. Whether node i is evaluated by pc (every node, unless evaluation.sample). */
int runner_evaluates(const runner *r, const dt_problem_config *pc, int i);
/* Draws r->eval_rank from the experiment's seed. */
DT_MUST_USE dt_status runner_eval_draw(runner *r);

/* watchdog.c. The exit code of a job the watchdog ended (no progress for --watchdog seconds). */
enum { DT_WATCHDOG_EXIT = 1 };
typedef struct runner_watchdog runner_watchdog;
/* Starts the thread that ends the job after opt->watchdog seconds without a heartbeat (none for
 * 0), the set-up included. */
DT_MUST_USE dt_status runner_watchdog_start(runner *r);
/* A heartbeat, and where the run is now (phase: a static string, "a round", ...), for the
 * watchdog's message. */
void runner_watchdog_at(runner *r, const char *phase, int problem, int round);
/* Once the run folder exists (every rank): this rank's record of life in <run>/.alive/, read by
 * a rank whose watchdog fires to name the rank it waited for. */
void runner_watchdog_folder(runner *r);
void runner_watchdog_stop(runner *r);

/* checkpoint.c. What a run's checkpoint must match: its config (by hash), node count and
 * folder (for messages). */
typedef struct ckpt_expect {
  uint64_t config_hash;
  int n;
  const dt_config *cfg;
  const char *outdir;
} ckpt_expect;
/* run.ckpt's bytes as read (file, size; ending in the checksum trailer when `checked`), verified
 * and decoded into rp and res[0..]: no I/O, so the fuzz harness drives it
 * (tests/fuzz/fuzz_checkpoint.c). */
DT_MUST_USE dt_status runner_checkpoint_decode(const char *path, const unsigned char *file, size_t size, int checked,
                                               const ckpt_expect *x, problem_result *res, resume_point *rp);

/* checkpoint.c. A checkpoint after round `round` of problem p (pr = its run; round 0 and pr
 * NULL: the problems before p are done). Collective. */
DT_MUST_USE dt_status runner_checkpoint(runner *r, int p, int round, problem_run *pr);
/* Whether a checkpoint is due after round `round` (checkpoint_every, checkpoint_minutes). */
int runner_checkpoint_due(const runner *r, int round);
/* Whether outdir holds a complete checkpoint; its folder into dir. */
int runner_checkpoint_find(const char *outdir, char *dir, size_t size);
/* Reads the run part of the checkpoint in r->outdir (found = 0 when there is none) and fills
 * r->res of the problems so far. Collective. */
DT_MUST_USE dt_status runner_checkpoint_load_run(runner *r, resume_point *rp);
/* Loads every node's state into pr's run (made by the optimizer's create), the replicated state,
 * timers and the CSV text so far. Collective. */
DT_MUST_USE dt_status runner_checkpoint_load_nodes(runner *r, const resume_point *rp, problem_run *pr);
void runner_resume_point_free(resume_point *rp);
/* Rank 0: the data files' SHA-256 for summary.yaml (tens of milliseconds for MNIST), hashed on a
 * thread of their own while the set-up and the first rounds go on (the data is read-only once
 * loaded); runner_files_end waits for them, or hashes them itself when no thread was started,
 * before anything reads files and num_files. Both are no-ops where there is nothing to do. */
void runner_files_begin(runner *r);
void runner_files_end(runner *r);
void runner_files_join(runner *r); /* only the wait (a runner's teardown) */
/* Resume: the data files' SHA-256 against those the run's summary.yaml recorded; a change is
 * DT_ERR_DATA naming the file. Collective. */
DT_MUST_USE dt_status runner_check_data(runner *r);
/* Removes the checkpoint folders (a completed run needs none). */
DT_MUST_USE dt_status runner_checkpoint_remove(runner *r);

/* signals.c: the signal that asked the run to stop, or 0; whether SIGUSR1 asked for a
 * checkpoint since the last call. */
int runner_stop_signal(void);
int runner_checkpoint_requested(void);

/* outdir.c: creates the output folder on rank 0 (--output-dir, or <output_metadir>/<time>_<name>
 * made unique) into r->outdir; every rank learns the outcome. Collective. */
DT_MUST_USE dt_status runner_make_outdir(runner *r);
/* Makes a folder and its parents. */
DT_MUST_USE dt_status runner_mkdir_p(const char *path);
/* Makes <metadir>/<YYYY-MM-DD_HH-MM-SS>_<name> (_2, _3, ... when taken) into out. */
DT_MUST_USE dt_status runner_stamped_folder(const char *metadir, const char *name, char *out, size_t size);
/* Releases the run folder's lock (rank 0). */
void runner_unlock(runner *r);

/* evaluate.c: evaluates every node at round `round`, appends the rows to pr's CSVs and the
 * node statistics to res (rank 0). Collective. */
/* may_stop: a signal may end the models' evaluation early, on every rank, with
 * DT_ERR_INTERRUPTED and nothing recorded (an evaluation the round loop measures again on
 * resume); not for those that save what was measured as a run stops, nor where the ranks agreed
 * already that the problem ends (its last round with a signal, a diverging round). */
DT_MUST_USE dt_status runner_evaluate(runner *r, problem_run *pr, int round, problem_result *res, int may_stop);

/* The time stamp the result files record (summary.yaml's and the runs table's started and
 * updated): local time in ISO 8601 with its UTC offset. */
static inline void runner_wall_clock(char *buf, size_t size) { dt_time_local(buf, size, "%Y-%m-%dT%H:%M:%S%z"); }

/* results.c */
/* Emits a dt_config as a run folder's config.yaml holds it (dt_config_emit_archive). */
DT_MUST_USE dt_status runner_emit_config(const void *cfg, FILE *f);
/* config.yaml, graph.yaml, split.csv. */
DT_MUST_USE dt_status runner_write_setup_files(runner *r);
/* The CSV headers of a problem (rank 0). */
void runner_begin_csv(const runner *r, problem_run *pr);
/* Rank 0: the rows of one evaluation into pr's CSV, and their min/mean/max into res. */
void runner_record_rows(const runner *r, problem_run *pr, int round, problem_result *res);
/* A finished problem's CSVs, and its models when save_models is on (collective). */
DT_MUST_USE dt_status runner_write_problem_files(runner *r, problem_run *pr);
/* summary.yaml with the first `done` problems and the run's status `end`. */
DT_MUST_USE dt_status runner_write_summary(runner *r, int done, const char *end);
/* solo_results.csv from all nodes' (validation loss, accuracy) pairs (rank 0). */
DT_MUST_USE dt_status runner_write_solo(runner *r, const double *all);

/* db.c: results.sqlite, written by rank 0 of a writing run (nothing elsewhere). Opening finds
 * (resume) or makes this run's row; a failure to open is an error, later write failures are kept
 * and returned by runner_db_status: an evaluation's stops the run before it is printed
 * (runner_evaluate), others are reported at the problem's end on every rank. */
DT_MUST_USE dt_status runner_db_open(runner *r, const char *config_text);
/* Problem p begins or continues: its evaluations after round `keep` (-1: all) and every later
 * problem's are dropped, to be measured again. */
void runner_db_begin_problem(runner *r, int p, int keep);
/* Rank 0, a run resumed whose rows were rebuilt (r->db_rebuilt): problem p's evaluations so far
 * from the CSV text a checkpoint kept (header first). */
DT_MUST_USE dt_status runner_db_put_csv(runner *r, int p, const char *csv, size_t len);
/* TensorBoard's copy (tensorboard.c, rank 0; nothing without experiment.tensorboard): a problem's
 * event file opened (purge_from > 0: a resumed problem, whose events from that round on are
 * written again), each evaluation's scalars appended, the file closed. */
void runner_tb_begin(runner *r, const problem_run *pr, int purge_from);
void runner_tb_evaluation(runner *r, const problem_run *pr, int round);
/* ok 1: the problem ran to its end, 0: it failed (the HParams session's status); -1: interrupted,
 * to be resumed, so its session stays open */
void runner_tb_end(runner *r, int ok);
/* After round `round` (1-based, every rank: a collective when it writes): train_loss_recent every
 * experiment.tensorboard_train_loss_every rounds; runner_tb_loss_reset when an evaluation reset
 * the run's totals. */
DT_MUST_USE dt_status runner_tb_round(runner *r, const problem_run *pr, int round);
void runner_tb_loss_reset(runner *r);
/* The run's totals as they are, where a problem's rounds (re)start. */
DT_MUST_USE dt_status runner_tb_loss_mark(runner *r, const problem_run *pr);
/* The evaluation just gathered in r->all_rows, committed. */
void runner_db_evaluation(runner *r, int p, const problem_run *pr, int round);
/* The run's status and the first `done` problems' results, committed. */
void runner_db_summary(runner *r, int done, const char *status);
DT_MUST_USE dt_status runner_db_status(const runner *r);
void runner_db_close(runner *r);

/* progress.c (all print on rank 0 only, and nothing with --quiet) */
void runner_say(const runner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The progress bar after round k: elapsed time since t_start, the rate of the rounds since round
 * `start` began at t_rounds, and the ETA at that rate. */
void runner_progress(const runner *r, const dt_problem_config *pc, int k, int start, double t_start, double t_rounds);
/* Seconds left of the whole run (and of the sweep around it) after round k of problem p, from the
 * rates measured so far: the current problem's, then the run's mean rate per round for the
 * problems after it, then the sweep's mean seconds per point (dt_run_options.sweep_*); < 0 while
 * nothing has been measured. */
double runner_eta(const runner *r, int p, int k, int start, double t_rounds);
/* "12 s" under a minute, else "m:ss" or "h:mm:ss" (a static buffer: one use per statement). */
const char *runner_clock_text(double s);
/* Whether to draw the progress bar (and its terminal control codes) for mode DT_PROGRESS_*: auto
 * wants stdout to be a terminal and, under a launcher, the launcher's own stdout too (mpirun
 * hands its ranks a pseudo-terminal even when its output goes to a file). */
int runner_progress_wanted(int mode, int launched);
/* The one-line min–max view of an evaluation (verbose_evals). */
void runner_print_evaluation(const runner *r, const dt_problem_config *pc, int round, const problem_result *res);
/* profile: true: the per-round time breakdown of a finished problem (rounds from `start` on).
 * Collective: the slowest rank's figures. */
DT_MUST_USE dt_status runner_print_profile(const runner *r, const problem_run *pr, const problem_result *res, int start);
/* The closing table of every problem run (printed even with --quiet). */
void runner_print_table(const runner *r, int done);

#endif
