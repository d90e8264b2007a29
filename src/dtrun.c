/* dtrun's entry point: parses the command line, sets up MPI when a command needs it, maps the
 * outcome to the exit codes of the CLI contract (0 ok, 1 runtime, 2 usage/config, 130
 * interrupted). Everything else lives in the library. */
#include <stdio.h>
#include <string.h>

#include "dt/log.h"
#include "dt/status.h"
#include "dt_config.h"

static const char usage_text[] =
    "usage: dtrun --help | --version\n"
    "\n"
    "dtrun runs decentralized-optimization experiments described in one YAML file.\n"
    "\n"
    "options:\n"
    "  -h, --help      show this help and exit\n"
    "  -V, --version   show the version and the build's features and exit\n"
    "\n"
    "exit codes: 0 success, 1 runtime failure, 2 usage or config error, 130 interrupted\n";

static void print_version(void) {
  printf("dtrun %s\n", DT_VERSION);
  printf("backends: cpu%s\n", DT_HAVE_CUDA ? ", cuda" : "");
}

int main(int argc, char **argv) {
  dt_log_init(0, 1, DT_LOG_INFO);
  if (argc < 2) {
    fputs(usage_text, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
    print_version();
    return 0;
  }
  fprintf(stderr, "dtrun: unknown command or option '%s'\n\n%s", cmd, usage_text);
  return 2;
}
