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

#include "dt/config.h"
#include "dt/exchange.h"
#include "dt/log.h"
#include "dt/nn.h"
#include "dt/optimizer.h"
#include "dt/run.h"
#include "dt/status.h"
#include "dt_config.h"

static const char usage_text[] =
    "usage: dtrun [run] EXPERIMENT.yaml [--output-dir DIR [--force]] [--set key.path=value]...\n"
    "                    [--sweep key.path=v1,v2,...]... [--quiet] [--progress auto|always|never]\n"
    "                    [--dump-trace DIR] [--point K|slurm]\n"
    "       dtrun check EXPERIMENT.yaml [--set key.path=value]... [--sweep key.path=v1,v2,...]...\n"
    "       dtrun check RUN_DIR|SWEEP_DIR\n"
    "       dtrun resume RUN_DIR|SWEEP_DIR [--quiet] [--progress auto|always|never]\n"
    "       dtrun compare RUN_OR_SWEEP_DIR... [--metric M[,M...]] [--target X[,X...]] [--x round|samples|bytes|seconds|sim_time]\n"
    "                    [--against KEY] [--where KEY=V[,V...]]\n"
    "                    [--csv|--markdown|--latex] [--plot FILE.pdf|.svg|.png [--size paper|slide] [--facet KEY]\n"
    "                    [--label KEY=TEXT]... [--title TEXT] [--xlim LO:HI] [--ylim [M=]LO:HI]... [--log AXES]]\n"
    "       dtrun runs [DIR] [--sort date|name|status|metric] [--where KEY=V[,V...]] [--json]\n"
    "       dtrun --help | --version\n"
    "\n"
    "Runs decentralized-optimization experiments described in one YAML file (configs/README.md\n"
    "lists every key). Without mpirun all graph nodes run in one process; with mpirun -np P\n"
    "(1 <= P <= nodes) they are spread over P ranks, with identical results.\n"
    "\n"
    "  run          run every problem of the experiment, write results under output_metadir\n"
    "  check        validate the experiment, print the resolved config and a summary; for a run\n"
    "               folder, its status (completed, interrupted, killed, running, ...)\n"
    "  resume       continue an interrupted or killed run from its last checkpoint (any rank count)\n"
    "  compare      tables (and figures) of runs and sweeps, aggregated over seeds\n"
    "  runs         the runs and sweeps in an output folder (default: outputs), one line each:\n"
    "               start, name, status now, problems, best final top-1 (--json: as JSON)\n";

/* The options (a second string: C11 promises string literals of 4095 characters). */
static const char options_text[] =
    "  --output-dir DIR     write into DIR instead of <output_metadir>/<time>_<name>\n"
    "  --force              let --output-dir be a folder that is not empty\n"
    "  --set key=value      override a config key, e.g. --set experiment.graph.num_nodes=10; a list\n"
    "                       value is [a, b]; '*' stands for every key at its level\n"
    "                       (problem_configs.*.optimizer_config.outer_iterations=50)\n"
    "  --sweep key=v1,v2    run one experiment per value (with the file's sweep: axes, a grid) into\n"
    "                       one sweep folder\n"
    "  --quiet              print only errors and the final summary\n"
    "  --point K|slurm      run: point K (from 0; slurm: SLURM_ARRAY_TASK_ID) of the sweep alone into\n"
    "                       --output-dir, the folder every job of an array shares; a point done is\n"
    "                       skipped, a stopped one resumed\n"
    "  --dump-trace DIR     run: also write what fixes the run's path (minibatches, random draws,\n"
    "                       every node's parameters after every round) into DIR, for the float64\n"
    "                       twins of tests/twin/ (small runs: one open file per node)\n"
    "  --progress WHEN      the live progress bar: auto (default: only when the output is a\n"
    "                       terminal, mpirun's own output included), always, never\n"
    "  --metric M,...       compare: the metrics (default top1_accuracy); the first is tabulated\n"
    "  --target X[,X...]    compare: the --x value at which the first metric's mean reaches X\n"
    "                       (accuracy from below, losses and consensus from above)\n"
    "  --against KEY        compare: rows by a config key's value (experiment.graph.num_nodes);\n"
    "                       with --plot, each target's --x against that value\n"
    "  --where KEY=V,...    compare, runs: only runs whose config has one of these values of KEY\n"
    "  --x WHAT             compare: round (default), samples, bytes, seconds or sim_time (experiment.network)\n"
    "  --csv, --markdown, --latex   compare: the table in that format\n"
    "  --plot FILE          compare: a figure (matplotlib), one panel per metric (and --facet value)\n"
    "  --size paper|slide   compare: a paper column (default) or a 16:9 slide\n"
    "  --facet KEY          compare --plot: a panel per value of a swept key, sweep axis or config key\n"
    "  --label KEY=TEXT     compare --plot: show TEXT for a metric, problem, key or value (cadmm=DiNNO)\n"
    "  --title TEXT         compare --plot: the figure's title\n"
    "  --xlim, --ylim LO:HI compare --plot: axis limits (0.5: or :1 leave a side free; --ylim M=LO:HI\n"
    "                       for metric M's panels alone)\n"
    "  --log AXES           compare --plot: auto (consensus errors, bytes), none, x, y or xy\n"
    "  --sort KEY           runs: by date (default), name, status or metric (best first)\n"
    "  --json               runs: a JSON array instead of lines\n"
    "\n"
    "exit codes: 0 success, 1 runtime failure, 2 usage or config error, 130 interrupted\n";

enum { MAX_SETS = 64 };

typedef struct args {
  const char *cmd;
  const char *file;
  const char *argv_dir; /* resume: the run folder as given */
  const char *output_dir;
  const char *dump_trace;
  const char *sets[MAX_SETS];
  int nsets;
  const char *sweeps[DT_SWEEP_MAX_AXES];
  int nsweeps;
  int quiet;
  int progress;
  int force;
  const char *dirs[256];
  int ndirs;
  dt_compare_options cmp;
  dt_runs_options runs;
  const char *point; /* --point K or slurm (SLURM_ARRAY_TASK_ID) */
} args;

/* --progress's value. */
static dt_status parse_progress(const char *w, int *progress) {
  if (strcmp(w, "auto") == 0) *progress = DT_PROGRESS_AUTO;
  else if (strcmp(w, "always") == 0) *progress = DT_PROGRESS_ALWAYS;
  else if (strcmp(w, "never") == 0) *progress = DT_PROGRESS_NEVER;
  else return DT_ERROR(DT_ERR_USAGE, "--progress: expected auto, always or never, found '%s'", w);
  return DT_OK;
}

/* The option at argv[*i] if it is one of run, check and resume (*i moves past its value);
 * *used = 0 when it is not. */
static dt_status run_option(int argc, char **argv, int *i, args *a, int *used) {
  const char *s = argv[*i];
  const int has_next = *i + 1 < argc;
  *used = 1;
  if (strcmp(s, "--set") == 0 || strcmp(s, "-s") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--set needs key.path=value");
    DT_CHECK(a->nsets < MAX_SETS, DT_ERR_USAGE, "at most %d --set options", MAX_SETS);
    a->sets[a->nsets++] = argv[++*i];
  } else if (strncmp(s, "--set=", 6) == 0) {
    DT_CHECK(a->nsets < MAX_SETS, DT_ERR_USAGE, "at most %d --set options", MAX_SETS);
    a->sets[a->nsets++] = s + 6;
  } else if (strcmp(s, "--sweep") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--sweep needs key.path=value,value,...");
    DT_CHECK(a->nsweeps < DT_SWEEP_MAX_AXES, DT_ERR_USAGE, "at most %d --sweep options", DT_SWEEP_MAX_AXES);
    a->sweeps[a->nsweeps++] = argv[++*i];
  } else if (strcmp(s, "--output-dir") == 0 || strcmp(s, "-o") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--output-dir needs a folder");
    a->output_dir = argv[++*i];
  } else if (strcmp(s, "--quiet") == 0 || strcmp(s, "-q") == 0) {
    a->quiet = 1;
  } else if (strcmp(s, "--progress") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--progress needs auto, always or never");
    DT_TRY(parse_progress(argv[++*i], &a->progress));
  } else if (strcmp(s, "--force") == 0) {
    a->force = 1;
  } else if (strcmp(s, "--point") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--point needs a point number (from 0) or slurm");
    a->point = argv[++*i];
  } else if (strncmp(s, "--point=", 8) == 0) {
    a->point = s + 8;
  } else if (strcmp(s, "--dump-trace") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--dump-trace needs a folder");
    a->dump_trace = argv[++*i];
  } else if (strncmp(s, "--dump-trace=", 13) == 0) {
    a->dump_trace = s + 13;
  } else {
    *used = 0;
  }
  return DT_OK;
}

/* --target's comma-separated numbers. */
static dt_status parse_targets(const char *list, dt_compare_options *c) {
  for (const char *q = list;;) {
    char *end;
    const double v = strtod(q, &end);
    DT_CHECK(end != q && (*end == '\0' || *end == ',') && v >= 0 && isfinite(v), DT_ERR_USAGE,
             "--target %s: expected numbers >= 0 separated by commas", list);
    DT_CHECK(c->num_targets < 8, DT_ERR_USAGE, "--target %s: at most 8 targets", list);
    c->targets[c->num_targets++] = v;
    if (*end == '\0') return DT_OK;
    q = end + 1;
  }
}

/* --xlim/--ylim's LO:HI (value: the whole argument; range: its LO:HI part): numbers, either side
 * empty but not both, LO < HI. */
static dt_status check_range(const char *option, const char *value, const char *range) {
  const char *colon = strchr(range, ':');
  DT_CHECK(colon != NULL && strchr(colon + 1, ':') == NULL, DT_ERR_USAGE, "%s %s: expected LO:HI (0:1, 0.5: or :1)", option, value);
  char *end;
  double lo = -INFINITY, hi = INFINITY;
  if (colon != range) {
    lo = strtod(range, &end);
    DT_CHECK(end == colon && isfinite(lo), DT_ERR_USAGE, "%s %s: the low end is not a number", option, value);
  }
  if (colon[1] != '\0') {
    hi = strtod(colon + 1, &end);
    DT_CHECK(*end == '\0' && isfinite(hi), DT_ERR_USAGE, "%s %s: the high end is not a number", option, value);
  }
  DT_CHECK(colon != range || colon[1] != '\0', DT_ERR_USAGE, "%s %s: give at least one end", option, value);
  DT_CHECK(lo < hi, DT_ERR_USAGE, "%s %s: the low end must be below the high end", option, value);
  return DT_OK;
}

/* The option at argv[*i] if it is one of compare's (*i moves past its value); *used = 0 when it
 * is not. */
static dt_status compare_option(int argc, char **argv, int *i, dt_compare_options *c, int *used) {
  const char *s = argv[*i];
  const int has_next = *i + 1 < argc;
  *used = 1;
  if (strcmp(s, "--metric") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--metric needs a column name");
    c->metric = argv[++*i];
  } else if (strcmp(s, "--target") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--target needs a number, or numbers separated by commas");
    DT_TRY(parse_targets(argv[++*i], c));
  } else if (strcmp(s, "--against") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--against needs a config key path (experiment.graph.num_nodes, ...)");
    c->against = argv[++*i];
  } else if (strcmp(s, "--where") == 0) {
    DT_CHECK(has_next && strchr(argv[*i + 1], '=') != NULL && argv[*i + 1][0] != '=', DT_ERR_USAGE,
             "--where needs key.path=value[,value...]");
    DT_CHECK(c->num_where < 8, DT_ERR_USAGE, "at most 8 --where options");
    c->where[c->num_where++] = argv[++*i];
  } else if (strcmp(s, "--plot") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--plot needs a file name ending in .pdf, .svg or .png");
    c->plot = argv[++*i];
    const char *ext = strrchr(c->plot, '.');
    DT_CHECK(ext && (strcmp(ext, ".png") == 0 || strcmp(ext, ".svg") == 0 || strcmp(ext, ".pdf") == 0), DT_ERR_USAGE,
             "--plot %s: the file name must end in .pdf, .svg or .png", c->plot);
  } else if (strcmp(s, "--x") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--x needs round, samples, bytes, seconds or sim_time");
    c->x = argv[++*i];
  } else if (strcmp(s, "--size") == 0) {
    DT_CHECK(has_next && (strcmp(argv[*i + 1], "paper") == 0 || strcmp(argv[*i + 1], "slide") == 0), DT_ERR_USAGE,
             "--size needs paper or slide");
    c->size = argv[++*i];
  } else if (strcmp(s, "--facet") == 0) {
    DT_CHECK(has_next && argv[*i + 1][0] != '\0', DT_ERR_USAGE, "--facet needs a swept key, sweep axis or config key path (graph, experiment.graph.type)");
    c->facet = argv[++*i];
  } else if (strcmp(s, "--label") == 0) {
    DT_CHECK(has_next && strchr(argv[*i + 1], '=') != NULL && argv[*i + 1][0] != '=', DT_ERR_USAGE,
             "--label needs KEY=TEXT (cadmm=DiNNO, top1_accuracy=Accuracy)");
    DT_CHECK(c->num_labels < 32, DT_ERR_USAGE, "at most 32 --label options");
    c->labels[c->num_labels++] = argv[++*i];
  } else if (strcmp(s, "--title") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--title needs a text");
    c->title = argv[++*i];
  } else if (strcmp(s, "--xlim") == 0 || strcmp(s, "--ylim") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "%s needs LO:HI (either side may be empty: 0.5: or :1)", s);
    const char *v = argv[++*i], *range = s[2] == 'y' && strchr(v, '=') != NULL ? strchr(v, '=') + 1 : v;
    DT_TRY(check_range(s, v, range));
    if (s[2] == 'x') c->xlim = v;
    else {
      DT_CHECK(c->num_ylim < 4, DT_ERR_USAGE, "at most 4 --ylim options");
      c->ylim[c->num_ylim++] = v;
    }
  } else if (strcmp(s, "--log") == 0) {
    DT_CHECK(has_next && (strcmp(argv[*i + 1], "auto") == 0 || strcmp(argv[*i + 1], "none") == 0 || strcmp(argv[*i + 1], "x") == 0 ||
                          strcmp(argv[*i + 1], "y") == 0 || strcmp(argv[*i + 1], "xy") == 0),
             DT_ERR_USAGE, "--log needs auto, none, x, y or xy");
    c->log = argv[++*i];
  } else if (strcmp(s, "--csv") == 0 || strcmp(s, "--markdown") == 0 || strcmp(s, "--latex") == 0) {
    c->format = s[2] == 'c' ? DT_COMPARE_CSV : s[2] == 'm' ? DT_COMPARE_MARKDOWN : DT_COMPARE_LATEX;
  } else {
    *used = 0;
  }
  return DT_OK;
}

/* The option at argv[*i] if it is one of runs' (*i moves past its value); *used = 0 when not. */
static dt_status runs_option(int argc, char **argv, int *i, args *a, int *used) {
  const char *s = argv[*i];
  const int has_next = *i + 1 < argc;
  *used = 1;
  if (strcmp(s, "--sort") == 0) {
    DT_CHECK(has_next, DT_ERR_USAGE, "--sort needs date, name, status or metric");
    a->runs.sort = argv[++*i];
  } else if (strncmp(s, "--sort=", 7) == 0) {
    a->runs.sort = s + 7;
  } else if (strcmp(s, "--json") == 0) {
    a->runs.json = 1;
  } else if (strcmp(s, "--where") == 0) {
    DT_CHECK(has_next && strchr(argv[*i + 1], '=') != NULL && argv[*i + 1][0] != '=', DT_ERR_USAGE,
             "--where needs key.path=value[,value...]");
    DT_CHECK(a->runs.num_where < 8, DT_ERR_USAGE, "at most 8 --where options");
    a->runs.where[a->runs.num_where++] = argv[++*i];
  } else {
    *used = 0;
  }
  return DT_OK;
}

/* A word that is not an option: a run folder of compare, else the experiment file (or folder). */
static dt_status positional(const char *s, args *a) {
  if (strcmp(a->cmd, "runs") == 0) {
    DT_CHECK(a->file == NULL, DT_ERR_USAGE, "runs takes one folder: '%s' and '%s'", a->file, s);
    a->file = s;
  } else if (strcmp(a->cmd, "compare") == 0) {
    DT_CHECK(a->ndirs < 256, DT_ERR_USAGE, "at most 256 run folders");
    a->dirs[a->ndirs++] = s;
  } else {
    DT_CHECK(a->file == NULL, DT_ERR_USAGE, "more than one experiment file: '%s' and '%s'", a->file, s);
    a->file = a->argv_dir = s;
  }
  return DT_OK;
}

/* What each command needs, and options that do not go with it. */
static dt_status check_args(const args *a) {
  if (strcmp(a->cmd, "runs") == 0) return DT_OK;
  if (strcmp(a->cmd, "compare") == 0) DT_CHECK(a->ndirs > 0, DT_ERR_USAGE, "compare needs at least one run folder");
  else if (strcmp(a->cmd, "resume") == 0) DT_CHECK(a->file != NULL, DT_ERR_USAGE, "resume needs a run folder (see dtrun --help)");
  else DT_CHECK(a->file != NULL, DT_ERR_USAGE, "%s needs an experiment file (see dtrun --help)", a->cmd);
  DT_CHECK(!a->force || (strcmp(a->cmd, "run") == 0 && a->output_dir != NULL), DT_ERR_USAGE, "--force only goes with run --output-dir DIR");
  DT_CHECK(a->dump_trace == NULL || (strcmp(a->cmd, "run") == 0 && a->nsweeps == 0), DT_ERR_USAGE,
           "--dump-trace goes with run (one experiment, not a sweep or a resume)");
  DT_CHECK(a->dump_trace == NULL || a->dump_trace[0] != '\0', DT_ERR_USAGE, "--dump-trace needs a folder");
  DT_CHECK(a->nsweeps == 0 || strcmp(a->cmd, "run") == 0 || strcmp(a->cmd, "check") == 0, DT_ERR_USAGE,
           "--sweep goes with run or check");
  DT_CHECK(a->point == NULL || (strcmp(a->cmd, "run") == 0 && a->output_dir != NULL), DT_ERR_USAGE,
           "--point goes with run and --output-dir SWEEP_DIR: every job of an array runs its point into the same sweep folder");
  DT_CHECK(strcmp(a->cmd, "resume") != 0 || (a->nsets == 0 && a->output_dir == NULL), DT_ERR_USAGE,
           "resume takes no --set or --output-dir: it continues the run folder's own config.yaml in that folder");
  return DT_OK;
}

static dt_status parse_args(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->cmd = "run";
  int i = 1;
  if (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "check") == 0 || strcmp(argv[1], "compare") == 0 || strcmp(argv[1], "resume") == 0 ||
      strcmp(argv[1], "runs") == 0)
    a->cmd = argv[i++];
  for (; i < argc; i++) {
    int used = 0;
    if (strcmp(a->cmd, "runs") == 0) { /* its own options only */
      DT_TRY(runs_option(argc, argv, &i, a, &used));
      if (used) continue;
      DT_CHECK(argv[i][0] != '-' || argv[i][1] == '\0', DT_ERR_USAGE, "runs: unknown option '%s' (see dtrun --help)", argv[i]);
      DT_TRY(positional(argv[i], a));
      continue;
    }
    DT_TRY(run_option(argc, argv, &i, a, &used));
    if (!used) DT_TRY(compare_option(argc, argv, &i, &a->cmp, &used));
    if (used) continue;
    DT_CHECK(argv[i][0] != '-' || argv[i][1] == '\0', DT_ERR_USAGE, "unknown option '%s' (see dtrun --help)", argv[i]);
    DT_TRY(positional(argv[i], a));
  }
  return check_args(a);
}

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
    if (st == DT_ERR_USAGE && strstr(dt_error_message(), "MPI ranks") == NULL && strstr(dt_error_message(), "--help") == NULL)
      fprintf(stderr, "(dtrun --help shows the usage)\n");
  }
  return dt_status_exit_code(st);
}

static void command_line(int argc, char **argv, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < argc && used < size; i++) used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? " " : "", argv[i]);
}

/* --help, --version, or no command line: the exit code; -1 for a command. */
static int info_command(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_text, stderr);
    fputs(options_text, stderr);
    return 2;
  }
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
    fputs(usage_text, stdout);
    fputs(options_text, stdout);
    /* the algorithms, from the registry: a new plug-in appears here by itself */
    printf("\nalgorithms (optimizer_config.alg_name; each explained in optimizers/<name>/README.md):\n");
    char names[64][64];
    int width = 0, count = 0;
    for (int i = 0; dt_optimizer_plugins[i] != NULL && count < 64; i++, count++) { /* "name (alias)", column as wide as the widest */
      const dt_plugin *p = dt_optimizer_plugins[i];
      const int alias = p->aliases != NULL && p->aliases[0] != NULL;
      snprintf(names[i], sizeof names[i], "%s%s%s%s", p->name, alias ? " (" : "", alias ? p->aliases[0] : "", alias ? ")" : "");
      width = (int)strlen(names[i]) > width ? (int)strlen(names[i]) : width;
    }
    for (int i = 0; i < count; i++) printf("  %-*s %s\n", width, names[i], dt_optimizer_plugins[i]->summary);
    return 0;
  }
  if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
    char algorithms[1024], varying[1024] = "";
    dt_plugin_list(dt_optimizer_plugins, algorithms, sizeof algorithms);
    for (int i = 0; dt_optimizer_plugins[i] != NULL; i++) /* those that accept experiment.graph.schedule */
      if (dt_optimizer_plugins[i]->schedule_ok != NULL)
        snprintf(varying + strlen(varying), sizeof varying - strlen(varying), "%s%s", varying[0] ? ", " : "",
                 dt_optimizer_plugins[i]->name);
    char directed[1024] = "";
    for (int i = 0; dt_optimizers[i] != NULL; i++) /* those that accept experiment.graph.directed */
      if (dt_optimizers[i]->directed_ok)
        snprintf(directed + strlen(directed), sizeof directed - strlen(directed), "%s%s", directed[0] ? ", " : "",
                 dt_optimizers[i]->plugin.name);
    printf("dtrun %s\nbackends: %s\nalgorithms: %s\ntime-varying graphs: %s\ndirected graphs: %s\nBLAS: OpenBLAS (%s kernels)\n",
           DT_VERSION, dt_backend_list(), algorithms, varying, directed, dt_cpu_kernel_name());
    return 0;
  }
  return -1;
}

/* `dtrun check` (no MPI): a run or sweep folder's status, or an experiment file (or its sweep)
 * validated with a summary. */
static dt_status check_command(const args *a, dt_config *cfg, dt_sweep *sweep) {
  struct stat sb;
  if (stat(a->file, &sb) == 0 && S_ISDIR(sb.st_mode))
    return dt_is_sweep_dir(a->file) ? dt_sweep_dir_status(a->file, stdout) : check_run_dir(a->file, cfg);
  dt_status st = dt_sweep_load(a->file, a->sweeps, a->nsweeps, sweep);
  if (st == DT_OK && sweep->num_axes > 0) st = dt_sweep_check(sweep, a->sets, a->nsets, stdout);
  else if (st == DT_OK) st = dt_config_load(a->file, &dt_builtin, a->sets, a->nsets, cfg);
  if (st == DT_OK && sweep->num_axes == 0) st = dt_experiment_check(cfg, stdout);
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
  if (resume && dt_is_sweep_dir(a->argv_dir)) {
    *mode = SWEEP_RESUME;
    return DT_OK;
  }
  if (!resume) DT_TRY(dt_sweep_load(a->file, a->sweeps, a->nsweeps, sweep));
  if (sweep->num_axes > 0) {
    *mode = SWEEP;
    return DT_OK;
  }
  if (resume) DT_TRY(resumable(a->argv_dir, a->file, a->quiet, &nothing));
  if (!nothing) DT_TRY(dt_config_load(a->file, &dt_builtin, a->sets, a->nsets, cfg));
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
                       .resume = resume, .dump_trace = a->dump_trace};
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
static int mpi_command(const args *a, int resume, dt_config *cfg, dt_sweep *sweep, int argc, char **argv) {
  dt_comm *comm = NULL;
  dt_status st = dt_comm_init(&argc, &argv, &comm);
  if (st != DT_OK) return report(st, 0);
  const int rank = dt_comm_rank(comm), size = dt_comm_size(comm);
  dt_log_init(rank, size, a->quiet ? DT_LOG_WARN : DT_LOG_INFO);
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
  /* first, before MPI or threads: this may restart the process once with better BLAS kernels */
  dt_cpu_select_kernels(argv);
  dt_log_init(0, 1, DT_LOG_INFO);
  const int info = info_command(argc, argv);
  if (info >= 0) return info;
  args a;
  dt_status st = parse_args(argc, argv, &a);
  if (st != DT_OK) return report(st, 0);
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
  return mpi_command(&a, resume, &cfg, &sweep, argc, argv);
}
