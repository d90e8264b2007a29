/* dtrun's command line: the commands and their options as one table (cli_cmds, cli_opts), from
 * which the parser (getopt_long), every command's --help and the shell completions are made, so
 * that none of them can miss an option the others know. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_impl.h"
#include "dt/config.h"
#include "dt/yaml.h"
#include "writer_impl.h"
#include "dt/log.h"
#include "dt/trace.h"
#include "dt/optimizer.h"
#include "dt_config.h"

enum { C_RUN = 1, C_CHECK = 2, C_RESUME = 4, C_COMPARE = 8, C_RUNS = 16, C_HELP = 32, C_COMPLETION = 64, C_MAN = 128 };

typedef struct cli_cmd {
  const char *name;
  unsigned bit;
  const char *args;    /* the positional arguments, for the usage line */
  const char *summary; /* one line */
  const char *about;   /* the help's paragraph */
  const char *example;
} cli_cmd;

static const cli_cmd cli_cmds[] = {
    {"run", C_RUN, "EXPERIMENT.yaml", "run every problem of an experiment (or every point of a sweep)",
     "Runs every (problem, optimizer) pair of the experiment from the same initial weights and data split, and\n"
     "writes the results under experiment.output_metadir (or --output-dir). Without mpirun all graph nodes run\n"
     "in one process; under mpirun -np P (1 <= P <= nodes) they spread over P ranks with identical results. A\n"
     "file with a sweep: key (or --sweep) runs every point of the grid into one sweep folder. `dtrun FILE` is\n"
     "`dtrun run FILE`.",
     "mpirun -np 5 dtrun run configs/dist_mnist.yaml --set experiment.graph.num_nodes=10"},
    {"check", C_CHECK, "EXPERIMENT.yaml | RUN_DIR | SWEEP_DIR", "validate an experiment, or show a run folder's status",
     "For a file: validates it (every bad value with its file, line and column), prints the resolved config and\n"
     "a summary (graph, split, model, memory, each problem) and exits 0, or 2 with the errors. For a run or\n"
     "sweep folder: its status; exit 0 for a completed run, 4 for one that did not complete.",
     "dtrun check configs/dinno_figure.yaml --sweep experiment.seed=0,1"},
    {"resume", C_RESUME, "RUN_DIR | SWEEP_DIR", "continue an interrupted or killed run from its last checkpoint",
     "Continues the run (or every unfinished point of the sweep) in the folder from its own config.yaml and its\n"
     "last checkpoint, at any rank count, to the files an uninterrupted run writes.",
     "mpirun -np 2 dtrun resume outputs/2026-11-26_dist_mnist"},
    {"compare", C_COMPARE, "RUN_OR_SWEEP_DIR...", "tables and figures of runs and sweeps, aggregated over seeds",
     "Reads each folder's results.sqlite, groups runs by their swept values (the seed aside) and problem, and\n"
     "prints the final metric's mean and 95% interval over seeds, rounds to targets, traffic and time; with\n"
     "--plot, a figure drawn by matplotlib (python/dtrun).",
     "dtrun compare outputs/study --metric top1_accuracy,consensus_error --facet graph --plot fig.pdf"},
    {"runs", C_RUNS, "[DIR]", "the runs and sweeps under an output folder, one line each",
     "Lists the run and sweep folders in DIR (default outputs): start, name, kind, status now (killed\n"
     "included), problems completed and the best final top-1 accuracy.",
     "dtrun runs outputs --sort metric --where experiment.graph.type=cycle"},
    {"help", C_HELP, "[COMMAND]", "this text, or a command's options", "Prints the commands, or one command's usage, options and an example.",
     "dtrun help compare"},
    {"completion", C_COMPLETION, "bash | zsh", "a shell completion script for dtrun",
     "Prints the completion script of commands, options, their values and config keys for bash or zsh.",
     "source <(dtrun completion bash)"},
    {"man", C_MAN, "", "the manual page (roff): commands, options, exit codes, environment, config keys",
     "Prints dtrun's manual page, made from the same tables as the help, the completions and configs/README.md.",
     "dtrun man | man -l -"},
};
enum { NCMDS = sizeof cli_cmds / sizeof cli_cmds[0] };

enum opt_id {
  O_HELP = 1000, O_LOG_LEVEL, O_SET, O_SWEEP, O_PROBLEM, O_OUTPUT_DIR, O_QUIET, O_PROGRESS, O_WATCHDOG, O_FORCE, O_POINT, O_DUMP_TRACE,
  O_TRACE_TAGS,
  O_METRIC, O_TARGET, O_AGAINST, O_WHERE, O_X, O_PLOT, O_SIZE, O_FACET, O_LABEL, O_TITLE, O_XLIM, O_YLIM, O_LOG, O_BAND, O_CSV,
  O_MARKDOWN, O_LATEX, O_SORT, O_JSON, O_TIME
};

typedef struct cli_opt {
  const char *name;
  char shortc;          /* 0: none */
  int id;
  unsigned cmds;        /* the commands that take it */
  const char *metavar;  /* NULL: a flag */
  const char *values;   /* completion: the choices (space-separated), "@keys" (config keys), "@metrics", "@file",
                           "@dir", or NULL */
  const char *help;
} cli_opt;

#define ALL (C_RUN | C_CHECK | C_RESUME | C_COMPARE | C_RUNS | C_HELP | C_COMPLETION | C_MAN)
static const cli_opt cli_opts[] = {
    {"help", 'h', O_HELP, ALL, NULL, NULL, "this command's usage, options and an example"},
    {"log-level", 0, O_LOG_LEVEL, C_RUN | C_CHECK | C_RESUME | C_COMPARE | C_RUNS, "LEVEL", "error warn info debug",
     "error, warn, info (default) or debug; DT_LOG_LEVEL sets it too"},
    {"set", 's', O_SET, C_RUN | C_CHECK, "KEY=VALUE", "@keys",
     "override a config key (experiment.graph.num_nodes=10); a list is [a, b]; '*' stands for every key at its level"},
    {"sweep", 0, O_SWEEP, C_RUN | C_CHECK, "KEY=V1,V2", "@keys", "one experiment per value (with the file's sweep: axes, a grid)"},
    {"problem", 'p', O_PROBLEM, C_RUN | C_CHECK, "NAME[,...]", "@problems",
     "only these problems of the file (their entries under problem_configs), as if it held only them"},
    {"output-dir", 'o', O_OUTPUT_DIR, C_RUN, "DIR", "@dir", "write into DIR instead of <output_metadir>/<time>_<name>"},
    {"force", 'f', O_FORCE, C_RUN, NULL, NULL, "let --output-dir be a folder that is not empty"},
    {"quiet", 'q', O_QUIET, C_RUN | C_RESUME, NULL, NULL, "print only warnings, errors and the final summary (--log-level warn)"},
    {"progress", 0, O_PROGRESS, C_RUN | C_RESUME, "WHEN", "auto always never",
     "the live progress bar: auto (default: only on a terminal, mpirun's own output included), always, never"},
    {"watchdog", 0, O_WATCHDOG, C_RUN | C_RESUME, "SECONDS", NULL,
     "end the job when no rank makes progress for SECONDS (default 600; 0: never), the last checkpoint kept"},
    {"point", 0, O_POINT, C_RUN, "K|slurm", "slurm",
     "run point K (from 0; slurm: SLURM_ARRAY_TASK_ID) of the sweep alone into --output-dir, the folder every job of "
     "an array shares"},
    {"dump-trace", 0, O_DUMP_TRACE, C_RUN, "DIR", "@dir",
     "also write what fixes the run's path (minibatches, draws, parameters after every round), for tests/twin/"},
    {"trace-tags", 0, O_TRACE_TAGS, C_RUN, "TAG[,TAG...]", NULL,
     "--dump-trace: only these records (BIDX,THET: the minibatches and parameters; tests/twin/README.md lists them)"},
    {"metric", 0, O_METRIC, C_COMPARE, "M[,M...]", "@metrics", "the metrics (default top1_accuracy); the first is tabulated"},
    {"target", 0, O_TARGET, C_COMPARE, "[M=]X[,...]", NULL,
     "the --x value at which metric M's mean (default top1_accuracy) reaches X (at or below X for losses and errors)"},
    {"x", 0, O_X, C_COMPARE, "AXIS", "round samples bytes seconds sim_time", "round (default), samples, bytes, seconds or sim_time"},
    {"against", 0, O_AGAINST, C_COMPARE, "KEY", "@keys", "rows by a config key's value; with --plot, each target's --x against it"},
    {"where", 0, O_WHERE, C_COMPARE | C_RUNS, "KEY=V[,V...]", "@keys", "only runs whose config has one of these values of KEY"},
    {"csv", 0, O_CSV, C_COMPARE, NULL, NULL, "the table as CSV (numbers only, snake_case columns)"},
    {"markdown", 0, O_MARKDOWN, C_COMPARE, NULL, NULL, "the table as Markdown"},
    {"latex", 0, O_LATEX, C_COMPARE, NULL, NULL, "the table as LaTeX"},
    {"plot", 0, O_PLOT, C_COMPARE, "FILE", "@file", "a figure (.pdf, .svg or .png): a panel per metric (and --facet value)"},
    {"size", 0, O_SIZE, C_COMPARE, "SIZE", "paper slide",
     "--plot: paper (a 3.4 in column, the page's 7 in with --facet; default) or slide (16:9)"},
    {"facet", 0, O_FACET, C_COMPARE, "KEY", "@keys", "--plot: a panel per value of a swept key, sweep axis or config key"},
    {"label", 0, O_LABEL, C_COMPARE, "KEY=TEXT", NULL, "--plot: show TEXT for a metric, problem, key or value (dinno=DiNNO)"},
    {"title", 0, O_TITLE, C_COMPARE, "TEXT", NULL, "--plot: the figure's title"},
    {"xlim", 0, O_XLIM, C_COMPARE, "LO:HI", NULL, "--plot: the x axis' limits (0: or :1000 leave a side free)"},
    {"ylim", 0, O_YLIM, C_COMPARE, "[M=]LO:HI", NULL, "--plot: the y axes' limits, or metric M's panels' alone"},
    {"log", 0, O_LOG, C_COMPARE, "AXES", "auto none x y xy", "--plot: log axes: auto (consensus errors, bytes), none, x, y, xy"},
    {"band", 0, O_BAND, C_COMPARE, "KIND", "ci95 sd sem minmax none",
     "--plot: the band over seeds: ci95 (95% t-interval, default), sd, sem, minmax or none"},
    {"sort", 0, O_SORT, C_RUNS, "KEY", "date name status metric", "date (default), name, status or metric (best first)"},
    {"json", 0, O_JSON, C_RUNS, NULL, NULL, "a JSON array instead of lines"},
    {"time", 0, O_TIME, C_CHECK, NULL, NULL,
     "also estimate the run's time here: a few rounds of every problem measured (a sweep: its first point, times the points)"},
};
enum { NOPTS = sizeof cli_opts / sizeof cli_opts[0] };

static const char *const metric_names[] = {"top1_accuracy", "validation_loss", "consensus_error", "consensus_error_raw",
                                           "train_loss", "current_epoch", "forward_pass_count"};

static const cli_cmd *find_cmd(const char *name) {
  for (int i = 0; i < NCMDS; i++)
    if (strcmp(cli_cmds[i].name, name) == 0) return &cli_cmds[i];
  return NULL;
}

/* ---- option values -------------------------------------------------------------------------- */

static dt_status parse_progress(const char *w, int *progress) {
  if (strcmp(w, "auto") == 0) *progress = DT_PROGRESS_AUTO;
  else if (strcmp(w, "always") == 0) *progress = DT_PROGRESS_ALWAYS;
  else if (strcmp(w, "never") == 0) *progress = DT_PROGRESS_NEVER;
  else return DT_ERROR(DT_ERR_USAGE, "--progress: expected auto, always or never, found '%s'", w);
  return DT_OK;
}

/* --target's [METRIC=] and comma-separated numbers (the metric's name is checked by compare). */
static dt_status parse_targets(const char *list, dt_compare_options *c) {
  const char *eq = strchr(list, '=');
  if (eq != NULL) {
    const size_t n = (size_t)(eq - list);
    DT_CHECK(n > 0 && n < sizeof c->target_metric, DT_ERR_USAGE, "--target %s: expected METRIC=X[,X...] or X[,X...]", list);
    DT_CHECK(c->target_metric[0] == '\0' || (strlen(c->target_metric) == n && strncmp(c->target_metric, list, n) == 0),
             DT_ERR_USAGE, "--target %s: the targets of one comparison are in one metric (%s already)", list, c->target_metric);
    memcpy(c->target_metric, list, n);
    c->target_metric[n] = '\0';
    list = eq + 1;
  }
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

/* v is one of the option's space-separated choices. */
static dt_status check_choice(const cli_opt *o, const char *v) {
  dt_log_level level;
  if (o->id == O_LOG_LEVEL && dt_log_parse_level(v, &level)) return DT_OK; /* the aliases too */
  const size_t n = strchr(v, ' ') != NULL ? 0 : strlen(v); /* one word */
  for (const char *p = o->values; n > 0 && (p = strstr(p, v)) != NULL; p += n)
    if ((p == o->values || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return DT_OK;
  char list[160] = "", words[128]; /* "a, b or c" */
  snprintf(words, sizeof words, "%s", o->values);
  const char *last = strrchr(words, ' ') != NULL ? strrchr(words, ' ') + 1 : words;
  char *save = NULL;
  for (char *w = strtok_r(words, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save))
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] == '\0' ? "" : w == last ? " or " : ", ", w);
  return DT_ERROR(DT_ERR_USAGE, "--%s: expected %s, found '%s'", o->name, list, v);
}

/* KEY=VALUE with a non-empty KEY. */
static dt_status check_pair(const cli_opt *o, const char *v) {
  DT_CHECK(strchr(v, '=') != NULL && v[0] != '=', DT_ERR_USAGE, "--%s needs %s (found '%s')", o->name, o->metavar, v);
  return DT_OK;
}

/* Applies option o with value v (NULL for a flag) to a. */
static dt_status apply(const cli_opt *o, const char *v, args *a) {
  dt_compare_options *c = &a->cmp;
  if (o->values != NULL && o->values[0] != '@' && o->id != O_POINT) DT_TRY(check_choice(o, v));
  switch (o->id) {
    case O_LOG_LEVEL: a->log_level = v; break;
    case O_SET:
      DT_CHECK(a->nsets < CLI_MAX_SETS, DT_ERR_USAGE, "at most %d --set options", CLI_MAX_SETS);
      a->sets[a->nsets++] = v;
      break;
    case O_SWEEP:
      DT_CHECK(a->nsweeps < DT_SWEEP_MAX_AXES, DT_ERR_USAGE, "at most %d --sweep options", DT_SWEEP_MAX_AXES);
      a->sweeps[a->nsweeps++] = v;
      break;
    case O_OUTPUT_DIR: a->output_dir = v; break;
    case O_FORCE: a->force = 1; break;
    case O_QUIET: a->quiet = 1; break;
    case O_PROGRESS: DT_TRY(parse_progress(v, &a->progress)); break;
    case O_WATCHDOG: {
      char *end = NULL;
      a->watchdog = strtod(v, &end);
      DT_CHECK(end != v && *end == '\0' && a->watchdog >= 0 && a->watchdog <= 1e7, DT_ERR_USAGE,
               "--watchdog: expected seconds from 0 (never) to 1e7, found '%s'", v);
      break;
    }
    case O_POINT: a->point = v; break;
    case O_PROBLEM: a->problems = v; break;
    case O_DUMP_TRACE:
      DT_CHECK(v[0] != '\0', DT_ERR_USAGE, "--dump-trace needs a folder");
      a->dump_trace = v;
      break;
    case O_TRACE_TAGS:
      DT_TRY(dt_trace_tags_check(v, "--trace-tags"));
      a->trace_tags = v;
      break;
    case O_METRIC: c->metric = v; break;
    case O_TARGET: DT_TRY(parse_targets(v, c)); break;
    case O_X: c->x = v; break;
    case O_AGAINST: c->against = v; break;
    case O_WHERE:
      DT_TRY(check_pair(o, v));
      if (strcmp(a->cmd, "runs") == 0) {
        DT_CHECK(a->runs.num_where < 8, DT_ERR_USAGE, "at most 8 --where options");
        a->runs.where[a->runs.num_where++] = v;
      } else {
        DT_CHECK(c->num_where < 8, DT_ERR_USAGE, "at most 8 --where options");
        c->where[c->num_where++] = v;
      }
      break;
    case O_CSV: c->format = DT_COMPARE_CSV; break;
    case O_MARKDOWN: c->format = DT_COMPARE_MARKDOWN; break;
    case O_LATEX: c->format = DT_COMPARE_LATEX; break;
    case O_PLOT: {
      const char *ext = strrchr(v, '.');
      DT_CHECK(ext && (strcmp(ext, ".png") == 0 || strcmp(ext, ".svg") == 0 || strcmp(ext, ".pdf") == 0), DT_ERR_USAGE,
               "--plot %s: the file name must end in .pdf, .svg or .png", v);
      c->plot = v;
      break;
    }
    case O_SIZE: c->size = v; break;
    case O_FACET:
      DT_CHECK(v[0] != '\0', DT_ERR_USAGE, "--facet needs a swept key, sweep axis or config key path (graph, experiment.graph.type)");
      c->facet = v;
      break;
    case O_LABEL:
      DT_TRY(check_pair(o, v));
      DT_CHECK(c->num_labels < 32, DT_ERR_USAGE, "at most 32 --label options");
      c->labels[c->num_labels++] = v;
      break;
    case O_TITLE: c->title = v; break;
    case O_XLIM:
      DT_TRY(check_range("--xlim", v, v));
      c->xlim = v;
      break;
    case O_YLIM:
      DT_TRY(check_range("--ylim", v, strchr(v, '=') != NULL ? strchr(v, '=') + 1 : v));
      DT_CHECK(c->num_ylim < 4, DT_ERR_USAGE, "at most 4 --ylim options");
      c->ylim[c->num_ylim++] = v;
      break;
    case O_LOG: c->log = v; break;
    case O_BAND: c->band = v; break;
    case O_SORT: a->runs.sort = v; break;
    case O_JSON: a->runs.json = 1; break;
    case O_TIME: a->check_time = 1; break;
    default: break;
  }
  return DT_OK;
}

/* ---- parsing -------------------------------------------------------------------------------- */

/* The unknown option word (without its value): its error, with the nearest option of the command
 * or the command that takes it. */
static dt_status unknown_option(const cli_cmd *cmd, const char *word) {
  char name[64];
  snprintf(name, sizeof name, "%s", word + (word[1] == '-' ? 2 : 1));
  char *eq = strchr(name, '=');
  if (eq != NULL) *eq = '\0';
  for (int i = 0; i < NOPTS && word[1] == '-'; i++)
    if (strcmp(cli_opts[i].name, name) == 0)
      for (int k = 0; k < NCMDS; k++)
        if (cli_opts[i].cmds & cli_cmds[k].bit)
          return DT_ERROR(DT_ERR_USAGE, "--%s is an option of %s, not of %s (dtrun help %s)", name, cli_cmds[k].name, cmd->name, cmd->name);
  const char *names[NOPTS];
  int n = 0;
  for (int i = 0; i < NOPTS; i++)
    if (cli_opts[i].cmds & cmd->bit) names[n++] = cli_opts[i].name;
  const char *near = dt_nearest(name, names, n);
  if (near == NULL && word[1] == '-') { /* a misspelt option of another command */
    const char *all[NOPTS];
    for (int i = 0; i < NOPTS; i++) all[i] = cli_opts[i].name;
    const char *other = dt_nearest(name, all, NOPTS);
    for (int i = 0; other != NULL && i < NOPTS; i++)
      for (int k = 0; strcmp(cli_opts[i].name, other) == 0 && k < NCMDS; k++)
        if (cli_opts[i].cmds & cli_cmds[k].bit)
          return DT_ERROR(DT_ERR_USAGE, "%s: unknown option '%s' (--%s is an option of %s; dtrun help %s lists %s's)", cmd->name, word,
                          other, cli_cmds[k].name, cmd->name, cmd->name);
  }
  return DT_ERROR(DT_ERR_USAGE, "%s: unknown option '%s'%s%s%s (dtrun help %s lists them)", cmd->name, word, near ? "; did you mean --" : "",
                  near ? near : "", near ? "?" : "", cmd->name);
}

/* A word that is not an option: a run folder of compare, else the command's one argument. */
static dt_status positional(const char *s, args *a) {
  if (strcmp(a->cmd, "compare") == 0) {
    DT_CHECK(a->ndirs < CLI_MAX_DIRS, DT_ERR_USAGE, "at most %d run folders", CLI_MAX_DIRS);
    a->dirs[a->ndirs++] = s;
    return DT_OK;
  }
  if (a->file != NULL) {
    if (strcmp(a->cmd, "run") == 0 || strcmp(a->cmd, "check") == 0)
      return DT_ERROR(DT_ERR_USAGE, "%s takes one experiment file: '%s' and '%s'%s", a->cmd, a->file, s,
                      strchr(s, '=') != NULL ? " (a key=value goes after --set)" : "");
    return DT_ERROR(DT_ERR_USAGE, "%s takes one argument: '%s' and '%s'", a->cmd, a->file, s);
  }
  a->file = a->argv_dir = s;
  return DT_OK;
}

/* What each command needs, and options that do not go together. */
static dt_status check_args(const args *a) {
  if (strcmp(a->cmd, "runs") == 0 || strcmp(a->cmd, "help") == 0) return DT_OK;
  if (strcmp(a->cmd, "man") == 0) {
    DT_CHECK(a->file == NULL, DT_ERR_USAGE, "man takes no argument (found '%s')", a->file);
    return DT_OK;
  }
  if (strcmp(a->cmd, "completion") == 0) {
    DT_CHECK(a->file != NULL, DT_ERR_USAGE, "completion needs a shell: bash or zsh");
    return DT_OK;
  }
  if (strcmp(a->cmd, "compare") == 0) DT_CHECK(a->ndirs > 0, DT_ERR_USAGE, "compare needs at least one run folder");
  else if (strcmp(a->cmd, "resume") == 0) DT_CHECK(a->file != NULL, DT_ERR_USAGE, "resume needs a run folder (dtrun help resume)");
  else DT_CHECK(a->file != NULL, DT_ERR_USAGE, "%s needs an experiment file (dtrun help %s)", a->cmd, a->cmd);
  DT_CHECK(!a->force || a->output_dir != NULL, DT_ERR_USAGE, "--force only goes with run --output-dir DIR");
  DT_CHECK(a->dump_trace == NULL || a->nsweeps == 0, DT_ERR_USAGE, "--dump-trace goes with run (one experiment, not a sweep)");
  DT_CHECK(a->trace_tags == NULL || a->dump_trace != NULL, DT_ERR_USAGE,
           "--trace-tags chooses what --dump-trace records; give --dump-trace DIR too");
  DT_CHECK(a->point == NULL || a->output_dir != NULL, DT_ERR_USAGE,
           "--point goes with run and --output-dir SWEEP_DIR: every job of an array runs its point into the same sweep folder");
  return DT_OK;
}

dt_status cli_parse(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->watchdog = -1;
  a->cmd = "run";
  int first = 1;
  if (argc > 1 && find_cmd(argv[1]) != NULL) a->cmd = argv[first++];
  else if (argc > 1 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
    a->cmd = "version";
    return DT_OK;
  } else if (argc > 1 && argv[1][0] != '-' && access(argv[1], F_OK) != 0) {
    /* not a command and no such file: a mistyped command (dtrun comapre) is named as one */
    const char *names[NCMDS];
    for (int i = 0; i < NCMDS; i++) names[i] = cli_cmds[i].name;
    const char *near = dt_nearest(argv[1], names, NCMDS);
    DT_CHECK(near == NULL, DT_ERR_USAGE,
             "'%s' is neither a command nor an experiment file: did you mean dtrun %s? (dtrun help lists the commands)", argv[1],
             near);
  }
  const cli_cmd *cmd = find_cmd(a->cmd);
  /* getopt_long over a copy that starts at the command: it reorders what it is given */
  const int n = argc - first + 1;
  char **copy = calloc((size_t)n + 1, sizeof *copy);
  struct option longs[NOPTS + 1];
  DT_CHECK(copy != NULL, DT_ERR_MEMORY, "out of memory");
  copy[0] = argv[0];
  for (int i = first; i < argc; i++) copy[i - first + 1] = argv[i];
  char shorts[2 * NOPTS + 2] = ":"; /* ':' first: a missing value is told apart from an unknown option */
  int nl = 0;
  for (int i = 0; i < NOPTS; i++) {
    if (!(cli_opts[i].cmds & cmd->bit)) continue;
    longs[nl++] = (struct option){cli_opts[i].name, cli_opts[i].metavar ? required_argument : no_argument, NULL, cli_opts[i].id};
    if (cli_opts[i].shortc) {
      const size_t l = strlen(shorts);
      shorts[l] = cli_opts[i].shortc;
      shorts[l + 1] = cli_opts[i].metavar ? ':' : '\0';
      shorts[l + 2] = '\0';
    }
  }
  longs[nl] = (struct option){NULL, 0, NULL, 0};
  dt_status st = DT_OK;
  opterr = 0;
  optind = 0; /* glibc: a full restart */
  int c;
  while (st == DT_OK && (c = getopt_long(n, copy, shorts, longs, NULL)) != -1) {
    const char *word = copy[optind - 1 >= 1 ? optind - 1 : 1];
    if (c == '?') {
      const cli_opt *flag = NULL; /* --force=1: getopt's '?' with the flag's id in optopt */
      for (int i = 0; optopt >= O_HELP && i < NOPTS; i++)
        if (cli_opts[i].id == optopt) flag = &cli_opts[i];
      if (flag != NULL) {
        st = DT_ERROR(DT_ERR_USAGE, "--%s takes no value (found '%s')", flag->name, word);
        break;
      }
      char w[8] = "-?";
      w[1] = (char)optopt;
      st = unknown_option(cmd, optopt != 0 ? w : word);
      break;
    }
    if (c == ':') {
      const cli_opt *o = NULL;
      for (int i = 0; i < NOPTS; i++)
        if ((optopt != 0 && cli_opts[i].id == optopt) || (optopt != 0 && cli_opts[i].shortc == optopt)) o = &cli_opts[i];
      st = o != NULL ? DT_ERROR(DT_ERR_USAGE, "--%s needs %s", o->name, o->metavar)
                     : DT_ERROR(DT_ERR_USAGE, "%s needs a value (dtrun help %s)", word, cmd->name);
      break;
    }
    const cli_opt *o = NULL;
    for (int i = 0; i < NOPTS; i++)
      if (cli_opts[i].id == c || (c < 256 && cli_opts[i].shortc == c && (cli_opts[i].cmds & cmd->bit))) o = &cli_opts[i];
    if (o->id == O_HELP) { /* dtrun --help: every command; dtrun COMMAND --help: that one */
      a->file = first == 1 ? NULL : cmd->name;
      a->cmd = "help";
      break;
    }
    st = apply(o, optarg, a);
  }
  for (int i = optind; st == DT_OK && strcmp(a->cmd, "help") != 0 && i < n; i++) st = positional(copy[i], a);
  if (st == DT_OK && strcmp(a->cmd, "help") == 0 && a->file == NULL && optind < n) a->file = copy[optind];
  free(copy);
  DT_TRY(st);
  return check_args(a);
}

/* ---- help ----------------------------------------------------------------------------------- */

/* The algorithms, from the registry: a new plug-in appears here by itself. */
static void print_algorithms(FILE *out) {
  fprintf(out, "\nalgorithms (optimizer_config.alg_name; each explained in optimizers/<name>/README.md):\n");
  char names[64][64];
  int width = 0, count = 0;
  for (int i = 0; dt_optimizer_plugins[i] != NULL && count < 64; i++, count++) { /* "name (alias)" */
    const dt_plugin *p = dt_optimizer_plugins[i];
    const int alias = p->aliases != NULL && p->aliases[0] != NULL;
    snprintf(names[i], sizeof names[i], "%s%s%s%s", p->name, alias ? " (" : "", alias ? p->aliases[0] : "", alias ? ")" : "");
    width = (int)strlen(names[i]) > width ? (int)strlen(names[i]) : width;
  }
  for (int i = 0; i < count; i++) fprintf(out, "  %-*s %s\n", width, names[i], dt_optimizer_plugins[i]->summary);
}

/* text's words from column col on, wrapped before column 100 with indent spaces on the next
 * lines (newlines in text are spaces). */
static void print_wrapped(FILE *out, const char *text, int col, int indent) {
  char words[1024];
  snprintf(words, sizeof words, "%s", text);
  const int start = col;
  char *save = NULL;
  for (char *w = strtok_r(words, " \n", &save); w != NULL; w = strtok_r(NULL, " \n", &save)) {
    if (col > start && col + 1 + (int)strlen(w) > 100) {
      fprintf(out, "\n%*s", indent, "");
      col = indent;
    }
    fprintf(out, "%s%s", col > indent && col > start ? " " : (col > start ? " " : ""), w);
    col += (col > start) + (int)strlen(w);
  }
  fputc('\n', out);
}

/* One option's line(s): "  -s, --set KEY=VALUE   help", the help wrapped before column 100. */
static void print_option(const cli_opt *o, FILE *out) {
  char head[64], letter[8] = "    "; /* "-s, " or four spaces: the long names line up */
  if (o->shortc) snprintf(letter, sizeof letter, "-%c, ", o->shortc);
  snprintf(head, sizeof head, "%s--%s%s%s", letter, o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
  if (strlen(head) > 25) fprintf(out, "  %s\n%28s", head, ""); /* a long head: the help below it */
  else fprintf(out, "  %-26s", head);
  print_wrapped(out, o->help, 28, 28);
}

dt_status cli_help(const char *command, FILE *out) {
  if (command == NULL) {
    fprintf(out, "usage: dtrun COMMAND [OPTIONS] [ARGUMENTS]     (dtrun EXPERIMENT.yaml runs it)\n"
                 "       dtrun help COMMAND | dtrun COMMAND --help | dtrun --version\n\n"
                 "Runs decentralized-optimization experiments described in one YAML file (configs/README.md lists\n"
                 "every key). Without mpirun all graph nodes run in one process; with mpirun -np P they spread over\n"
                 "P ranks, with identical results.\n\ncommands:\n");
    for (int i = 0; i < NCMDS; i++) fprintf(out, "  %-11s %s\n", cli_cmds[i].name, cli_cmds[i].summary);
    fprintf(out, "\nexit codes: 0 success, 1 runtime failure, 2 usage, config or data error (before anything runs),\n"
                 "3 every problem diverged, 4 check RUN_DIR: the run did not complete, 130 interrupted\n");
    print_algorithms(out);
    return DT_OK;
  }
  const cli_cmd *cmd = find_cmd(command);
  if (cmd == NULL) {
    const char *names[NCMDS];
    for (int i = 0; i < NCMDS; i++) names[i] = cli_cmds[i].name;
    const char *near = dt_nearest(command, names, NCMDS);
    return DT_ERROR(DT_ERR_USAGE, "help %s: no such command%s%s%s; the commands are run, check, resume, compare, runs, help, completion, man",
                    command, near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
  }
  fprintf(out, "usage: dtrun %s %s [OPTIONS]\n\n", cmd->name, cmd->args);
  print_wrapped(out, cmd->about, 0, 0);
  fprintf(out, "\noptions:\n");
  for (int i = 0; i < NOPTS; i++)
    if (cli_opts[i].cmds & cmd->bit) print_option(&cli_opts[i], out);
  fprintf(out, "\nexample:\n  %s\n", cmd->example);
  return DT_OK;
}

/* ---- completion ----------------------------------------------------------------------------- */

/* The words an option's value completes to, as one shell word list (config keys and problem names
 * are dtrun __complete's). */
static void value_words(const cli_opt *o, FILE *out) {
  if (o->values == NULL || (o->values[0] == '@' && strcmp(o->values, "@metrics") != 0)) return;
  if (strcmp(o->values, "@metrics") == 0) {
    for (size_t i = 0; i < sizeof metric_names / sizeof metric_names[0]; i++) fprintf(out, "%s%s", i ? " " : "", metric_names[i]);
  } else {
    fputs(o->values, out);
  }
}

/* The bash side of dtrun __complete: tok is the word as typed (COMP_LINE up to the cursor), since
 * readline splits KEY=VALUE at '=' (COMP_WORDBREAKS); the reply then holds what follows the last
 * '=' or ':' of tok, which is what readline replaces. COMP_WORDS[0] is the dtrun being completed. */
static const char bash_dynamic[] =
    "_dtrun_dynamic() {\n"
    "  local IFS=$'\\n' i keep=${tok%[=:]*}\n"
    "  COMPREPLY=($(\"${COMP_WORDS[0]}\" __complete \"$1\" \"$tok\" \"${COMP_WORDS[@]}\" 2>/dev/null))\n"
    "  if [[ $keep != \"$tok\" && $cur != \"$tok\" ]]; then\n"
    "    for i in \"${!COMPREPLY[@]}\"; do COMPREPLY[i]=${COMPREPLY[i]:${#keep}+1}; done\n"
    "  fi\n"
    "}\n";

static void bash_completion(FILE *out) {
  fprintf(out, "# bash completion for dtrun (dtrun completion bash), generated from its option and key tables; config\n"
               "# keys and problem names come from `dtrun __complete`, which reads the config file on the line\n%s"
               "_dtrun() {\n  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=run i tok=${COMP_WORDS[COMP_CWORD]} line\n"
               "  if [[ -n ${COMP_LINE-} ]]; then # the typed word, and the word before it, across readline's = and : splits\n"
               "    line=${COMP_LINE:0:COMP_POINT}; tok=${line##*[[:space:]]}; line=${line%%\"$tok\"}; line=${line%%\"${line##*[![:space:]]}\"}\n"
               "    [[ $tok == *[=:]* ]] && prev=${line##*[[:space:]]}\n"
               "  fi\n"
               "  for ((i = 1; i < COMP_CWORD; i++)); do case ${COMP_WORDS[i]} in",
          bash_dynamic);
  for (int i = 0; i < NCMDS; i++) fprintf(out, "%s%s", i ? "|" : " ", cli_cmds[i].name);
  fprintf(out, ") cmd=${COMP_WORDS[i]}; break ;; esac; done\n  case $prev in\n");
  for (int i = 0; i < NOPTS; i++) {
    const cli_opt *o = &cli_opts[i];
    if (o->metavar == NULL) continue;
    fprintf(out, "    --%s%s%c)", o->name, o->shortc ? "|-" : "", o->shortc ? o->shortc : ' ');
    if (o->values == NULL) fprintf(out, " return ;;\n");
    else if (strcmp(o->values, "@file") == 0) fprintf(out, " compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n");
    else if (strcmp(o->values, "@dir") == 0) fprintf(out, " compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n");
    else if (strcmp(o->values, "@keys") == 0 && strchr(o->metavar, '=') != NULL)
      fprintf(out, " compopt -o nospace 2>/dev/null; _dtrun_dynamic key; return ;;\n");
    else if (strcmp(o->values, "@keys") == 0) fprintf(out, " _dtrun_dynamic keyname; return ;;\n");
    else if (strcmp(o->values, "@problems") == 0) fprintf(out, " _dtrun_dynamic problem; return ;;\n");
    else {
      const int pairs = strchr(o->metavar, '=') != NULL; /* KEY=VALUE: keys with '=' and no space after */
      fprintf(out, " %sCOMPREPLY=($(compgen %s-W \"", pairs ? "compopt -o nospace 2>/dev/null; " : "", pairs ? "-S = " : "");
      value_words(o, out);
      fprintf(out, "\" -- \"$cur\")); return ;;\n");
    }
  }
  fprintf(out, "  esac\n  if [[ $cur == -* ]]; then\n    case $cmd in\n");
  for (int k = 0; k < NCMDS; k++) {
    fprintf(out, "      %s) COMPREPLY=($(compgen -W \"", cli_cmds[k].name);
    for (int i = 0, n = 0; i < NOPTS; i++)
      if (cli_opts[i].cmds & cli_cmds[k].bit) fprintf(out, "%s--%s", n++ ? " " : "", cli_opts[i].name);
    fprintf(out, "\" -- \"$cur\")) ;;\n");
  }
  fprintf(out, "    esac\n  elif [[ $COMP_CWORD == 1 ]]; then\n    compopt -o filenames 2>/dev/null\n    COMPREPLY=($(compgen -W \"");
  for (int i = 0; i < NCMDS; i++) fprintf(out, "%s%s", i ? " " : "", cli_cmds[i].name);
  fprintf(out, "\" -- \"$cur\") $(compgen -f -X '!*.yaml' -- \"$cur\") $(compgen -d -- \"$cur\"))\n"
               "  elif [[ $cmd == help ]]; then\n    COMPREPLY=($(compgen -W \"");
  for (int i = 0; i < NCMDS; i++) fprintf(out, "%s%s", i ? " " : "", cli_cmds[i].name);
  fprintf(out, "\" -- \"$cur\"))\n  elif [[ $cmd == completion ]]; then\n    COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\"))\n"
               "  else\n    compopt -o filenames 2>/dev/null\n    COMPREPLY=($(compgen -f -- \"$cur\"))\n  fi\n}\ncomplete -F _dtrun dtrun\n");
}

static void zsh_completion(FILE *out) {
  fprintf(out, "#compdef dtrun\n# zsh completion for dtrun (dtrun completion zsh), generated from its option and key tables\n"
               "_dtrun_dynamic() { # config keys and problem names from dtrun __complete, which reads the config on the line\n"
               "  local -a c; c=(${(f)\"$(${words[1]} __complete $1 \"$PREFIX\" ${words[@]} 2>/dev/null)\"})\n"
               "  compadd -Q -S '' -a c\n}\n"
               "_dtrun() {\n  local cmd=run\n  (( CURRENT > 2 )) && case $words[2] in");
  for (int i = 0; i < NCMDS; i++) fprintf(out, "%s%s", i ? "|" : " ", cli_cmds[i].name);
  fprintf(out, ") cmd=$words[2] ;; esac\n  if (( CURRENT == 2 )); then\n    local -a cmds=(");
  for (int i = 0; i < NCMDS; i++) fprintf(out, "%s'%s:%s'", i ? " " : "", cli_cmds[i].name, cli_cmds[i].summary);
  fprintf(out, ")\n    _describe command cmds\n    _files -g '*.yaml'\n    return\n  fi\n  case $cmd in\n");
  for (int k = 0; k < NCMDS; k++) {
    fprintf(out, "    %s) _arguments -s", cli_cmds[k].name);
    for (int i = 0; i < NOPTS; i++) {
      const cli_opt *o = &cli_opts[i];
      if (!(o->cmds & cli_cmds[k].bit)) continue;
      if (o->shortc) fprintf(out, " \\\n      '(-%c --%s)'{-%c,--%s}'[", o->shortc, o->name, o->shortc, o->name);
      else fprintf(out, " \\\n      '--%s[", o->name);
      for (const char *p = o->help; *p; p++) { /* brackets, colons and quotes would end the spec */
        if (*p == '\'') fputs("'\\''", out);
        else fputc(*p == '[' ? '(' : *p == ']' ? ')' : *p == ':' ? ' ' : *p, out);
      }
      fprintf(out, "]");
      if (o->metavar != NULL) {
        fprintf(out, ":%s:", o->metavar);
        if (o->values == NULL) fprintf(out, " ");
        else if (strcmp(o->values, "@file") == 0) fprintf(out, "_files");
        else if (strcmp(o->values, "@dir") == 0) fprintf(out, "_files -/");
        else if (strcmp(o->values, "@keys") == 0) fprintf(out, "_dtrun_dynamic %s", strchr(o->metavar, '=') != NULL ? "key" : "keyname");
        else if (strcmp(o->values, "@problems") == 0) fprintf(out, "_dtrun_dynamic problem");
        else {
          fprintf(out, "(");
          value_words(o, out);
          fprintf(out, ")");
        }
      }
      fprintf(out, "'");
    }
    fprintf(out, " \\\n      '*:file:_files' ;;\n");
  }
  fprintf(out, "  esac\n}\n_dtrun \"$@\"\n");
}

dt_status cli_completion(const char *shell, FILE *out) {
  if (strcmp(shell, "bash") == 0) bash_completion(out);
  else if (strcmp(shell, "zsh") == 0) zsh_completion(out);
  else return DT_ERROR(DT_ERR_USAGE, "completion %s: expected bash or zsh", shell);
  return DT_OK;
}

/* ---- dynamic completion: dtrun __complete ---------------------------------------------------- */

/* What a config file names: its problems and each one's algorithm (canonical). From the loader
 * when the file loads, else from its YAML as written (a file being edited); none when neither
 * reads. */
typedef struct file_problems {
  int n;
  char name[DT_MAX_PROBLEMS][DT_NAME_MAX], alg[DT_MAX_PROBLEMS][32];
} file_problems;

static void problems_of(const char *path, file_problems *fp) {
  memset(fp, 0, sizeof *fp);
  dt_config *cfg = calloc(1, sizeof *cfg);
  if (cfg != NULL && dt_config_load(path, &dt_builtin, NULL, 0, cfg) == DT_OK) {
    for (int p = 0; p < cfg->num_problems; p++) {
      snprintf(fp->name[p], sizeof fp->name[p], "%s", cfg->problems[p].key);
      snprintf(fp->alg[p], sizeof fp->alg[p], "%s", cfg->problems[p].alg_name);
    }
    fp->n = cfg->num_problems;
  } else {
    size_t len = 0;
    char *text = dt_read_file_bounded(path, DT_YAML_MAX_BYTES, &len);
    dt_ynode *root = NULL;
    if (text != NULL && dt_yaml_parse(text, len, path, &root) == DT_OK && root->kind == DT_YN_MAP) {
      const dt_ynode *pcs = dt_ynode_get(root, "problem_configs");
      for (int i = 0; pcs != NULL && pcs->kind == DT_YN_MAP && i < pcs->n && fp->n < DT_MAX_PROBLEMS; i++) {
        const dt_ynode *oc = pcs->items[i]->kind == DT_YN_MAP ? dt_ynode_get(pcs->items[i], "optimizer_config") : NULL;
        const dt_ynode *an = oc != NULL && oc->kind == DT_YN_MAP ? dt_ynode_get(oc, "alg_name") : NULL;
        const dt_optimizer_def *def = an != NULL && an->kind == DT_YN_SCALAR ? dt_optimizer_find(an->text) : NULL;
        snprintf(fp->name[fp->n], sizeof fp->name[fp->n], "%s", pcs->keys[i]->text);
        snprintf(fp->alg[fp->n++], sizeof fp->alg[0], "%s", def != NULL ? def->plugin.name : "");
      }
    }
    dt_ynode_free(root);
    free(text);
  }
  free(cfg);
  dt_error_clear();
}

/* The item of a comma-separated list being typed: what follows the last ',' of s (s without one). */
static const char *last_item(const char *s) {
  const char *comma = strrchr(s, ',');
  return comma != NULL ? comma + 1 : s;
}

typedef struct complete_keys {
  FILE *out;
  const char *cur; /* the word being completed: KEY, or KEY=VALUE (a sweep's V1,V2,...) */
  const file_problems *fp;
  int pairs; /* KEY=VALUE (keys offered with their '='), or a KEY alone */
} complete_keys;

/* key, complete: "key=" when cur is a prefix of it; after '=', the key's values (an enum's names,
 * true and false, the algorithms) that the value being typed (after the last ',') begins. */
static void offer(const complete_keys *c, const char *key, const dt_key *k) {
  const char *eq = strchr(c->cur, '=');
  if (eq == NULL || !c->pairs) {
    if (eq == NULL && strncmp(key, c->cur, strlen(c->cur)) == 0) fprintf(c->out, "%s%s\n", key, c->pairs ? "=" : "");
    return;
  }
  if (strlen(key) != (size_t)(eq - c->cur) || strncmp(key, c->cur, (size_t)(eq - c->cur)) != 0) return;
  const char *v = last_item(eq + 1);
  static const char *const bools[] = {"true", "false", NULL};
  const size_t tail = strlen(".optimizer_config.alg_name"), kl = strlen(key);
  if (kl >= tail && strcmp(key + kl - tail, ".optimizer_config.alg_name") == 0) {
    for (int i = 0; dt_optimizers[i] != NULL; i++)
      if (strncmp(dt_optimizers[i]->plugin.name, v, strlen(v)) == 0)
        fprintf(c->out, "%.*s%s\n", (int)(v - c->cur), c->cur, dt_optimizers[i]->plugin.name);
    return;
  }
  const char *const *vals = k->type == DT_KEY_ENUM ? k->values : k->type == DT_KEY_BOOL ? bools : NULL;
  for (; vals != NULL && *vals != NULL; vals++)
    if (strncmp(*vals, v, strlen(v)) == 0) fprintf(c->out, "%.*s%s\n", (int)(v - c->cur), c->cur, *vals);
}

/* The schema's keys made concrete: "problem_configs.<name>." becomes each problem of the file, and
 * an algorithm's own "(alg)." keys are offered for the problems that run it. Layer lists
 * ("layers[]") are not settable from the command line. */
static void complete_key(const char *path, const dt_key *k, void *ctx) {
  const complete_keys *c = ctx;
  static const char pre[] = "problem_configs.<name>.";
  if (k->type == DT_KEY_SECTION || k->alias_of != NULL || strstr(path, "[]") != NULL) return;
  if (strncmp(path, pre, sizeof pre - 1) != 0) {
    offer(c, path, k);
    return;
  }
  const char *rest = path + sizeof pre - 1, *open = strchr(rest, '('), *close = open != NULL ? strchr(open, ')') : NULL;
  for (int i = 0; i < c->fp->n; i++) {
    char buf[DT_NAME_MAX + 256];
    if (open == NULL) {
      snprintf(buf, sizeof buf, "problem_configs.%s.%s", c->fp->name[i], rest);
    } else {
      const size_t n = close != NULL ? (size_t)(close - open - 1) : 0;
      if (close == NULL || close[1] != '.' || strlen(c->fp->alg[i]) != n || strncmp(open + 1, c->fp->alg[i], n) != 0) continue;
      snprintf(buf, sizeof buf, "problem_configs.%s.%.*s%s", c->fp->name[i], (int)(open - rest), rest, close + 2);
    }
    offer(c, buf, k);
  }
}

int cli_complete(int argc, char **argv, FILE *out) {
  if (argc < 2) return 2;
  const char *kind = argv[0], *cur = argv[1], *config = NULL;
  for (int i = 2; i < argc && config == NULL; i++) { /* the command line's config: its first YAML file */
    const size_t n = strlen(argv[i]);
    if (((n > 5 && strcmp(argv[i] + n - 5, ".yaml") == 0) || (n > 4 && strcmp(argv[i] + n - 4, ".yml") == 0)) &&
        access(argv[i], R_OK) == 0)
      config = argv[i];
  }
  file_problems fp = {0};
  if (config != NULL) problems_of(config, &fp);
  if (strcmp(kind, "key") == 0 || strcmp(kind, "keyname") == 0) {
    const complete_keys c = {out, cur, &fp, strcmp(kind, "key") == 0};
    dt_config_visit_keys(&dt_builtin, complete_key, (void *)&c);
  } else if (strcmp(kind, "problem") == 0) { /* NAME[,NAME...]: the name after the last ',' */
    const char *v = last_item(cur);
    for (int i = 0; i < fp.n; i++)
      if (strncmp(fp.name[i], v, strlen(v)) == 0) fprintf(out, "%.*s%s\n", (int)(v - cur), cur, fp.name[i]);
  }
  return 0;
}

/* ---- the manual page ------------------------------------------------------------------------ */

/* text for roff: backslashes, hyphens (as \-) and a line's leading dot or quote escaped. */
static void roff(FILE *out, const char *text) {
  if (text[0] == '.' || text[0] == '\'') fputs("\\&", out);
  for (const char *p = text; *p; p++) {
    if (*p == '\\') fputs("\\e", out);
    else if (*p == '-') fputs("\\-", out);
    else if (*p == '\n') fputc(' ', out);
    else fputc(*p, out);
  }
}

static void man_option(FILE *out, const cli_opt *o) {
  fputs(".TP\n", out);
  if (o->shortc) fprintf(out, "\\fB\\-%c\\fR, ", o->shortc);
  fputs("\\fB", out);
  roff(out, "--");
  roff(out, o->name);
  fputs("\\fR", out);
  if (o->metavar) {
    fputs(" \\fI", out);
    roff(out, o->metavar);
    fputs("\\fR", out);
  }
  fputc('\n', out);
  roff(out, o->help);
  fputc('\n', out);
}

static void man_key(const char *path, const dt_key *k, void *ctx) {
  FILE *out = ctx;
  if (k->type == DT_KEY_SECTION || k->type == DT_KEY_SPECIAL) return;
  fputs(".TP\n\\fB", out);
  roff(out, path);
  fputs("\\fR", out);
  if (k->def != NULL && k->def[0] != '\0') {
    fputs(" (default ", out);
    roff(out, k->def);
    fputc(')', out);
  }
  fputc('\n', out);
  roff(out, k->help != NULL ? k->help : "");
  if (k->alias_of != NULL) {
    fputs("; alias of ", out);
    roff(out, k->alias_of);
  }
  fputc('\n', out);
}

dt_status cli_man(FILE *out) {
  fprintf(out, ".TH DTRUN 1 \"\" \"dtrun %s\" \"User Commands\"\n.SH NAME\ndtrun \\- run and compare decentralized-optimization "
               "experiments\n.SH SYNOPSIS\n.B dtrun\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]\n.br\n.B dtrun\n"
               "\\fIEXPERIMENT.yaml\\fR [\\fIOPTIONS\\fR]\n.SH DESCRIPTION\n", DT_VERSION);
  roff(out, "dtrun reads one YAML experiment (a communication graph, a split of a dataset over its nodes, a model and a list "
            "of problems, each an optimizer) and runs every problem from identical initial weights and data split. Without "
            "mpirun all graph nodes run in one process; under mpirun -np P they spread over P ranks with identical results.");
  fputs("\n.SH COMMANDS\n", out);
  for (int i = 0; i < NCMDS; i++) {
    fprintf(out, ".SS %s ", cli_cmds[i].name);
    roff(out, cli_cmds[i].args);
    fputc('\n', out);
    roff(out, cli_cmds[i].about);
    fputs("\n.PP\nOptions:\n", out);
    for (int k = 0; k < NOPTS; k++)
      if (cli_opts[k].cmds & cli_cmds[i].bit) man_option(out, &cli_opts[k]);
    fputs(".PP\nExample:\n.nf\n.RS\n", out);
    roff(out, cli_cmds[i].example);
    fputs("\n.RE\n.fi\n", out);
  }
  fputs(".SH EXIT STATUS\n.TP\n0\nsuccess\n.TP\n1\nruntime failure (memory, MPI, I/O, no progress for "
        "\\fB\\-\\-watchdog\\fR seconds, a bug)\n.TP\n2\nbad input (usage, "
        "config, data files), found before anything runs\n.TP\n3\nevery problem diverged (the files are written)\n.TP\n4\n"
        "\\fBcheck\\fR RUN_DIR: the run did not complete\n.TP\n130\ninterrupted (SIGINT, SIGTERM, SIGHUP); resume continues it\n",
        out);
  fputs(".SH ENVIRONMENT\n.TP\nDT_LOG_LEVEL\nerror, warn, info or debug, as \\fB\\-\\-log\\-level\\fR\n.TP\nDT_THREADS\n"
        "threads per rank\n.TP\nDTRUN_PYTHON\nthe Python with matplotlib and pandas that \\fBcompare \\-\\-plot\\fR runs\n"
        ".TP\nNO_COLOR\nno colour from scripts/setup.sh\n", out);
  fputs(".SH CONFIGURATION KEYS\nEvery key of an experiment file, with its default (configs/README.md has the same table):\n", out);
  dt_config_visit_keys(&dt_builtin, man_key, out);
  fputs(".SH SEE ALSO\n\\fBmpirun\\fR(1), README.md, docs/ and configs/README.md in dtrun's sources\n", out);
  return ferror(out) ? DT_ERROR(DT_ERR_IO, "cannot write the manual page") : DT_OK;
}
