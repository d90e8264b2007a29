/* dtrun's entry point: parses the command line, sets up MPI when a command needs it, has rank 0
 * load the config and broadcast it, and maps the outcome to the exit codes of the CLI contract
 * (0 ok, 1 runtime failure, 2 usage or config error, 130 interrupted). Everything else lives in
 * the library. Only this file may exit or call MPI_Abort. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dt/io.h"
#include "dt/config.h"
#include "dt/exchange.h"
#include "dt/log.h"
#include "dt/nn.h"
#include "dt/optimizer.h"
#include "dt/run.h"
#include "dt/status.h"
#include "dt_config.h"
#include "cli_impl.h"

/* `dtrun check RUN_DIR`'s exit code for a folder that loads: 0 completed, 4 not (interrupted,
 * killed, running, failed, unknown), so scripts can tell. */
static int run_dir_code = 0;

/* `dtrun check RUN_DIR`: the folder's status, and whether its config still loads. */
static dt_status check_run_dir(const char *dir, dt_config *cfg) {
  char status[64], holder[512], path[4096 + 16], ckpt[4096 + 128];
  dt_run_dir_status(dir, status, sizeof status, holder, sizeof holder);
  snprintf(path, sizeof path, "%s/config.yaml", dir);
  DT_CHECK(access(path, R_OK) == 0, DT_ERR_USAGE, "%s is neither an experiment file nor a run folder (no config.yaml in it)", dir);
  DT_TRY(dt_config_load(path, &dt_builtin, NULL, 0, cfg));
  printf("%s: %s%s%s%s\n", dir, status, holder[0] ? " (" : "", holder, holder[0] ? ")" : "");
  printf("  config: %s (%s, %d problem%s)\n", path, cfg->experiment.name, cfg->num_problems, cfg->num_problems == 1 ? "" : "s");
  if (dt_run_checkpoint_describe(dir, cfg, ckpt, sizeof ckpt)) printf("  checkpoint: %s\n", ckpt);
  if (strcmp(status, "killed") == 0 || strcmp(status, "interrupted") == 0 || strcmp(status, "failed") == 0)
    printf("  continue with: dtrun resume %s\n", dir);
  run_dir_code = strcmp(status, "completed") == 0 ? 0 : 4;
  return DT_OK;
}

/* `dtrun resume RUN_DIR` (rank 0): whether the folder can be resumed; *nothing = 1 with a
 * message when it has nothing left to run. */
static dt_status resumable(const char *dir, const char *config, int quiet, int *nothing) {
  char status[64], holder[512];
  *nothing = 0;
  DT_CHECK(access(config, R_OK) == 0, DT_ERR_USAGE, "%s is not a run folder (no config.yaml in it)", dir);
  dt_run_dir_status(dir, status, sizeof status, holder, sizeof holder);
  DT_CHECK(strcmp(status, "unknown") != 0, DT_ERR_USAGE,
           "%s is not a run folder dtrun wrote (it has a config.yaml but no summary.yaml); to run that config: dtrun run %s", dir, config);
  DT_CHECK(strcmp(status, "running") != 0, DT_ERR_USAGE, "%s is still running (%s): nothing to resume", dir, holder);
  *nothing = strcmp(status, "completed") == 0;
  if (*nothing) printf("%s: completed; nothing to resume\n", dir);
  else if (!quiet) printf("%s: %s; resuming\n", dir, status);
  return DT_OK;
}

/* The command a usage error's hint names (dtrun help CMD). */
static const char *hint_cmd = "run";

/* Prints the error (rank 0 only); the traceback too for failures that are not the user's. */
static int report(dt_status st, int rank) {
  if (st == DT_OK) return 0;
  if (rank == 0) {
    if (st == DT_ERR_CONFIG || st == DT_ERR_USAGE || st == DT_ERR_INTERRUPTED || st == DT_ERR_DIVERGED || dt_log_get_level() < DT_LOG_DEBUG) {
      fprintf(stderr, "dtrun: %s\n", dt_error_message());
    } else {
      char buf[8192];
      dt_error_format(buf, sizeof buf);
      fprintf(stderr, "dtrun: %s\n", buf);
    }
    if (st == DT_ERR_USAGE && strstr(dt_error_message(), "MPI ranks") == NULL && strstr(dt_error_message(), "dtrun help") == NULL &&
        strcmp(hint_cmd, "help") != 0)
      fprintf(stderr, "(dtrun help %s shows the usage)\n", hint_cmd);
  }
  return dt_status_exit_code(st);
}

static void command_line(int argc, char **argv, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < argc && used < size; i++) used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? " " : "", argv[i]);
}

/* `dtrun --version`: the version and what this build holds. */
static int version_command(void) {
  char algorithms[1024], varying[1024];
  dt_plugin_list(dt_optimizer_plugins, algorithms, sizeof algorithms);
  char directed[1024];
  dt_optimizers_running_on(DT_RUNS_TIME_VARYING, varying, sizeof varying);
  dt_optimizers_running_on(DT_RUNS_DIRECTED, directed, sizeof directed);
  printf("dtrun %s\nbackends: %s\nalgorithms: %s\ntime-varying graphs: %s\ndirected graphs: %s\nBLAS: OpenBLAS (%s kernels)\n",
         DT_VERSION, dt_backend_list(), algorithms, varying, directed, dt_cpu_kernel_name());
  return 0;
}

/* The log level: --log-level, else DT_LOG_LEVEL, else warn with --quiet and info without; a
 * level below info makes the run quiet (no evaluation lines). Errors: an unknown level. */
static dt_status log_level_of(args *a, dt_log_level *level) {
  const char *env = getenv("DT_LOG_LEVEL");
  *level = a->quiet ? DT_LOG_WARN : DT_LOG_INFO;
  if (env != NULL && env[0] != '\0')
    DT_CHECK(dt_log_parse_level(env, level), DT_ERR_USAGE,
             "DT_LOG_LEVEL=%s: expected error, warn, info or debug (or warning, err, ...)", env);
  if (a->log_level != NULL)
    DT_CHECK(dt_log_parse_level(a->log_level, level), DT_ERR_USAGE,
             "--log-level %s: expected error, warn, info or debug (or warning, err, ...)", a->log_level);
  if (*level < DT_LOG_INFO) a->quiet = 1;
  return DT_OK;
}

/* --problem with a sweep: refused (each point's config.yaml holds every problem, which resume and
 * compare read). */
static dt_status problem_in_sweep(const args *a) {
  return DT_ERROR(DT_ERR_USAGE, "--problem %s: %s is a sweep; --problem selects problems of one experiment (give the "
                  "sweep a file without the others, or an axis over their keys)", a->problems, a->file);
}

/* `dtrun check` (no MPI): a run or sweep folder's status, or an experiment file (or its sweep)
 * validated with a summary. */
static dt_status check_command(const args *a, dt_config *cfg, dt_sweep *sweep) {
  struct stat sb;
  if (stat(a->file, &sb) == 0 && S_ISDIR(sb.st_mode))
    return dt_is_sweep_dir(a->file) ? dt_sweep_dir_status(a->file, stdout) : check_run_dir(a->file, cfg);
  dt_status st = dt_sweep_load(a->file, a->sweeps, a->nsweeps, sweep);
  if (st == DT_OK && sweep->num_axes > 0 && a->problems != NULL) st = problem_in_sweep(a);
  if (st == DT_OK && sweep->num_axes > 0) st = dt_sweep_check(sweep, a->sets, a->nsets, stdout);
  else if (st == DT_OK) st = dt_config_load(a->file, &dt_builtin, a->sets, a->nsets, cfg);
  if (st == DT_OK && sweep->num_axes == 0 && a->problems != NULL) st = dt_config_keep_problems(cfg, a->problems);
  if (st == DT_OK && sweep->num_axes == 0) st = dt_experiment_check(cfg, stdout);
  if (st == DT_OK && a->check_time) { /* the first point's config stands for every point of a sweep */
    const int points = sweep->num_axes > 0 ? sweep->num_points : 1;
    if (sweep->num_axes > 0) st = dt_sweep_point_config(sweep, 0, &dt_builtin, a->sets, a->nsets, cfg);
    dt_comm *comm = NULL;
    int argc = 1;
    char *words[] = {(char *)"dtrun", NULL}, **argv = words;
    if (st == DT_OK) st = dt_comm_init(&argc, &argv, &comm);
    if (st == DT_OK) {
      st = dt_experiment_time(comm, cfg, points, stdout);
      const dt_status fst = dt_comm_finalize(comm);
      if (st == DT_OK) st = fst;
    }
  }
  dt_sweep_free(sweep);
  return st;
}

/* `dtrun resume DIR`: the run goes on in DIR from DIR/config.yaml (written into config). */
static dt_status resume_paths(args *a, char *config, size_t size) {
  DT_CHECK(strlen(a->argv_dir) + sizeof "/config.yaml" <= size, DT_ERR_USAGE,
           "resume: the run folder's name is longer than %zu characters", size - 13);
  snprintf(config, size, "%s/config.yaml", a->argv_dir);
  a->file = config;
  a->output_dir = a->argv_dir;
  return DT_OK;
}

/* What rank 0 loaded for every rank to run. */
enum { FAILED = 0, RUN = 1, NOTHING = 2, SWEEP = 3, SWEEP_RESUME = 4 };

/* Rank 0: the sweep (into sweep) or the experiment's config (into cfg) to run, as *mode. */
static dt_status load_on_root(const args *a, int resume, dt_config *cfg, dt_sweep *sweep, double *mode) {
  int nothing = 0;
  *mode = FAILED;
  /* every folder an option names, checked before anything is written (a run folder made and
   * then abandoned would look like a run) */
  if (a->dump_trace != NULL) DT_TRY(dt_folder_usable("--dump-trace", a->dump_trace, 0, DT_ERR_USAGE));
  if (!resume && a->output_dir != NULL) DT_TRY(dt_folder_usable("--output-dir", a->output_dir, 1, DT_ERR_USAGE));
  if (resume && dt_is_sweep_dir(a->argv_dir)) {
    *mode = SWEEP_RESUME;
    return DT_OK;
  }
  if (!resume) DT_TRY(dt_sweep_load(a->file, a->sweeps, a->nsweeps, sweep));
  if (sweep->num_axes > 0) {
    if (a->problems != NULL) return problem_in_sweep(a);
    *mode = SWEEP;
    return DT_OK;
  }
  if (resume) DT_TRY(resumable(a->argv_dir, a->file, a->quiet, &nothing));
  if (nothing) { /* completed: its rows are in results.sqlite, or rebuilt there (best effort) */
    const dt_run_options ro = {.output_dir = a->argv_dir, .quiet = a->quiet, .resume = 1};
    dt_status st = dt_config_load(a->file, &dt_builtin, a->sets, a->nsets, cfg);
    if (st == DT_OK) st = dt_experiment_db_repair(cfg, &ro);
    if (st != DT_OK) dt_log_warn("%s: its rows in results.sqlite were not checked: %s", a->argv_dir, dt_error_message());
  } else {
    DT_TRY(dt_config_load(a->file, &dt_builtin, a->sets, a->nsets, cfg));
    if (a->problems != NULL) DT_TRY(dt_config_keep_problems(cfg, a->problems));
    DT_CHECK(a->dump_trace == NULL || cfg->experiment.graph.schedule == DT_SCHEDULE_STATIC, DT_ERR_USAGE,
             "--dump-trace traces static graphs; this experiment's graph changes every round (experiment.graph.schedule: %s)",
             dt_schedule_names[cfg->experiment.graph.schedule]);
  }
  *mode = nothing ? NOTHING : RUN;
  return DT_OK;
}

/* Runs what rank 0 loaded (mode, received by every rank): the experiment or the sweep (rank 0's
 * sweep). Collective. */
static dt_status run_loaded(dt_comm *comm, const args *a, int resume, double mode, const dt_config *cfg, dt_sweep *sweep, int argc,
                            char **argv) {
  char cmdline[4096];
  command_line(argc, argv, cmdline, sizeof cmdline);
  dt_run_options ro = {.output_dir = a->output_dir, .quiet = a->quiet, .progress = a->progress, .command_line = cmdline, .force = a->force,
                       .resume = resume, .dump_trace = a->dump_trace, .trace_tags = a->trace_tags,
                       .watchdog = a->watchdog >= 0 ? a->watchdog : 600};
  if (a->point != NULL) { /* one point of a sweep: --point K, or slurm's array index */
    DT_CHECK(mode == SWEEP, DT_ERR_USAGE, "--point runs one point of a sweep; %s has no sweep (a sweep: key or --sweep)", a->file);
    const char *k = a->point;
    if (strcmp(k, "slurm") == 0) {
      k = getenv("SLURM_ARRAY_TASK_ID");
      DT_CHECK(k != NULL, DT_ERR_USAGE, "--point slurm: SLURM_ARRAY_TASK_ID is not set (not a job of an array?)");
    }
    char *end;
    const long v = strtol(k, &end, 10);
    DT_CHECK(end != k && *end == '\0' && v >= 0 && v < 1000000, DT_ERR_USAGE, "--point %s: expected a point number from 0", k);
    ro.single = 1;
    ro.single_point = (int)v;
  }
  if (mode == RUN) return dt_experiment_run(comm, cfg, &ro);
  if (mode == SWEEP && a->dump_trace != NULL) return DT_ERROR(DT_ERR_USAGE, "--dump-trace traces one experiment; this file is a sweep");
  if (mode == SWEEP || mode == SWEEP_RESUME) {
    ro.resume = 0;
    return dt_sweep_run(comm, dt_comm_rank(comm) == 0 ? sweep : NULL, a->sets, a->nsets, &ro, mode == SWEEP_RESUME ? a->argv_dir : NULL);
  }
  if (mode == FAILED) return DT_ERROR(DT_ERR_CONFIG, "rank 0 could not load the experiment");
  return DT_OK; /* NOTHING: a completed run resumed */
}

/* run and resume, under MPI: rank 0 loads, every rank runs; the exit code. */
static int mpi_command(const args *a, int resume, dt_config *cfg, dt_sweep *sweep, int argc, char **argv, dt_log_level level) {
  dt_comm *comm = NULL;
  dt_status st = dt_comm_init(&argc, &argv, &comm);
  if (st != DT_OK) return report(st, 0);
  const int rank = dt_comm_rank(comm), size = dt_comm_size(comm);
  dt_log_init(rank, size, level);
  dt_run_install_signal_handlers();
  /* only rank 0 reads the file; every rank receives the same resolved config (or runs the sweep
   * rank 0 read) */
  double mode = FAILED;
  if (rank == 0) st = load_on_root(a, resume, cfg, sweep, &mode);
  if (size > 1) {
    dt_status bst = dt_comm_bcast(comm, &mode, sizeof mode, 0);
    if (bst == DT_OK && mode == RUN) bst = dt_comm_bcast(comm, cfg, sizeof *cfg, 0);
    if (bst != DT_OK) st = bst;
  }
  if (st == DT_OK) st = run_loaded(comm, a, resume, mode, cfg, sweep, argc, argv);
  dt_sweep_free(sweep);
  int code = report(st, rank);
  if (st != DT_OK && st != DT_ERR_CONFIG && st != DT_ERR_USAGE && st != DT_ERR_INTERRUPTED && st != DT_ERR_DIVERGED && size > 1) {
    /* a failure on one rank would leave the others waiting in a collective */
    fflush(stdout);
    fflush(stderr);
    dt_comm_abort(comm, code);
  }
  const dt_status fst = dt_comm_finalize(comm);
  if (code == 0) code = report(fst, rank); /* else the earlier failure is the one reported */
  return code;
}

int main(int argc, char **argv) {
  dt_rss_mark_start(); /* the memory estimate's baseline: the process before it loads anything */
  /* first, before any BLAS call: OpenBLAS's kernels (DT_BLAS_KERNELS, OPENBLAS_CORETYPE) */
  char why[512];
  if (!dt_cpu_select_kernels(why, sizeof why)) {
    fprintf(stderr, "dtrun: %s\n", why);
    return 2;
  }
  dt_log_init(0, 1, DT_LOG_INFO);
  if (argc >= 2 && strcmp(argv[1], "__complete") == 0) return cli_complete(argc - 2, argv + 2, stdout);
  if (argc < 2) {
    if (cli_help(NULL, stderr) != DT_OK) return 1;
    return 2;
  }
  args a;
  dt_status st = cli_parse(argc, argv, &a);
  hint_cmd = a.cmd;
  if (st != DT_OK) return report(st, 0);
  if (strcmp(a.cmd, "version") == 0) return version_command();
  if (strcmp(a.cmd, "help") == 0) return report(cli_help(a.file, stdout), 0);
  if (strcmp(a.cmd, "completion") == 0) return report(cli_completion(a.file, stdout), 0);
  if (strcmp(a.cmd, "man") == 0) return report(cli_man(stdout), 0);
  dt_log_level level;
  if ((st = log_level_of(&a, &level)) != DT_OK) return report(st, 0);
  dt_log_init(0, 1, level);
  if (strcmp(a.cmd, "compare") == 0) return report(dt_compare(a.dirs, a.ndirs, &a.cmp, stdout), 0);
  if (strcmp(a.cmd, "runs") == 0) return report(dt_runs(a.file != NULL ? a.file : "outputs", &a.runs, stdout), 0);
  static dt_config cfg;  /* plain data, ~100 KB: not on the stack */
  static dt_sweep sweep; /* rank 0's, when the file or the command line sweeps */
  if (strcmp(a.cmd, "check") == 0) {
    st = check_command(&a, &cfg, &sweep);
    return st != DT_OK ? report(st, 0) : run_dir_code;
  }
  char resume_config[4096 + 16];
  const int resume = strcmp(a.cmd, "resume") == 0;
  if (resume && (st = resume_paths(&a, resume_config, sizeof resume_config)) != DT_OK) return report(st, 0);
  return mpi_command(&a, resume, &cfg, &sweep, argc, argv, level);
}
