/* dtrun's command line (experiments/cli.c): one table of commands and their options, from which
 * come the parser (getopt_long: --opt=value and --opt value, -- ends the options, combined short
 * flags), each command's --help, and the bash and zsh completions. main.c runs what it parsed. */
#ifndef DT_CLI_IMPL_H
#define DT_CLI_IMPL_H

#include <stdio.h>

#include "dt/run.h"
#include "dt/status.h"
#include "dt/sweep.h"

enum { CLI_MAX_SETS = 64, CLI_MAX_DIRS = 256 };

typedef struct args {
  const char *cmd;      /* run, check, resume, compare, runs, help, completion, man, version */
  const char *file;     /* run, check: the experiment file (or check's run folder); runs: the folder;
                           help: the command asked about; completion: the shell */
  const char *argv_dir; /* resume: the run folder as given */
  const char *output_dir;
  const char *dump_trace;
  const char *trace_tags; /* --trace-tags, or NULL: every record */
  const char *sets[CLI_MAX_SETS];
  int nsets;
  const char *sweeps[DT_SWEEP_MAX_AXES];
  int nsweeps;
  int quiet;
  int progress;
  double watchdog; /* --watchdog SECONDS; < 0: not given (600) */
  int force;
  const char *dirs[CLI_MAX_DIRS];
  int ndirs;
  dt_compare_options cmp;
  dt_runs_options runs;
  const char *point; /* --point K or slurm (SLURM_ARRAY_TASK_ID) */
  const char *problems; /* --problem NAME[,NAME...], or NULL */
  const char *log_level; /* --log-level, or NULL */
  int check_time;        /* check --time */
} args;

/* Parses argv (a copy: argv itself is left in its order for MPI and the recorded command line)
 * into a. Errors: DT_ERR_USAGE, naming the option and the nearest one a command has. */
DT_MUST_USE dt_status cli_parse(int argc, char **argv, args *a);
/* `dtrun help [COMMAND]`, `dtrun --help`, `dtrun COMMAND --help`: the usage to out. Errors:
 * DT_ERR_USAGE for a command that does not exist. */
DT_MUST_USE dt_status cli_help(const char *command, FILE *out);
/* `dtrun completion bash|zsh`: the completion script, generated from the same tables as the
 * parser (commands, options, their values) and the config keys (configs/README.md's table). */
DT_MUST_USE dt_status cli_completion(const char *shell, FILE *out);
/* dtrun __complete KIND WORD [LINE...] (hidden; the completion scripts call it): the completions
 * of WORD, one per line, from the first YAML file among LINE's words. KIND key: config keys as
 * KEY= (problem_configs.NAME.… for the file's problems, each algorithm's own keys under the
 * problems that run it), or after '=' the key's values; KIND problem: the file's problem names
 * (after the last ','). Prints nothing it cannot work out; returns the exit code. */
int cli_complete(int argc, char **argv, FILE *out);

/* `dtrun man`: the manual page in roff, from the same tables (and every config key). */
DT_MUST_USE dt_status cli_man(FILE *out);

#endif
