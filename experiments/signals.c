/* SIGINT and SIGTERM set a flag: the round in progress finishes, every rank agrees to stop at its
 * end, what was measured is written (marked interrupted) and dtrun exits 130. */
#include <signal.h>
#include <string.h>

#include "runner_impl.h"

static void on_signal(int sig) { dt_stop_request(sig); }

void dt_run_install_signal_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

int runner_stop_signal(void) { return dt_stop_requested(); }
