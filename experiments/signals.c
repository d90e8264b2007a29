/* SIGINT, SIGTERM and SIGHUP (a closed terminal) set a flag: the round in progress finishes,
 * every rank agrees to stop at its end, the state is checkpointed, what was measured is written
 * (marked interrupted) and dtrun exits 130. SIGPIPE is ignored: output into a closed pipe
 * (`dtrun run x.yaml | head`) is lost, quietly, and the run goes on writing its files. SIGUSR2 does the same; unlike SIGTERM and SIGINT, OpenMPI's mpirun forwards it as it
 * is, so `kill -USR2 <mpirun>` makes mpirun exit 130 too (on TERM or INT, mpirun 4.1 exits 1 and
 * kills the ranks after odls_base_sigkill_timeout, 1 s by default). SIGUSR1 (what batch systems
 * send ahead of preemption) asks for a checkpoint at the end of the round, and the run goes on. */
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "runner_impl.h"

static volatile sig_atomic_t checkpoint_asked = 0;

static void on_signal(int sig) { dt_stop_request(sig); }
static void on_usr1(int sig) {
  (void)sig;
  checkpoint_asked = 1;
}

int runner_checkpoint_requested(void) {
  const int asked = checkpoint_asked;
  checkpoint_asked = 0;
  return asked;
}

/* A crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL) says so with its backtrace on stderr (addresses:
 * `addr2line -e build/dtrun ADDR` names them), then dies of the signal as before. Only
 * async-signal-safe calls (backtrace is, once loaded: it is loaded at install). */
static void on_crash(int sig) {
  static const char head[] = "dtrun: crashed with signal ";
  char num[4] = {(char)('0' + sig / 10 % 10), (char)('0' + sig % 10), '\n', 0};
  void *frames[64];
  ssize_t w = write(STDERR_FILENO, head, sizeof head - 1);
  w += write(STDERR_FILENO, sig >= 10 ? num : num + 1, sig >= 10 ? 3 : 2);
  (void)w;
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);
  raise(sig);
}

void dt_run_install_signal_handlers(void) {
  void *warm[1];
  (void)backtrace(warm, 1); /* loads libgcc now, not inside the handler */
  struct sigaction crash;
  memset(&crash, 0, sizeof crash);
  crash.sa_handler = on_crash;
  crash.sa_flags = (int)SA_RESETHAND;
  sigemptyset(&crash.sa_mask);
  sigaction(SIGSEGV, &crash, NULL);
  sigaction(SIGBUS, &crash, NULL);
  sigaction(SIGFPE, &crash, NULL);
  sigaction(SIGILL, &crash, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sigaction(SIGUSR2, &sa, NULL); /* what mpirun forwards as it is (it aborts on TERM and INT) */
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, NULL);
}

int runner_stop_signal(void) { return dt_stop_requested(); }
