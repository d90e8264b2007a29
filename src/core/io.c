/* Opening input files (see dt/io.h). */
#define _POSIX_C_SOURCE 200809L
#include "dt/io.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

FILE *dt_open_regular(const char *path, struct stat *st) {
  struct stat own;
  if (st == NULL) st = &own;
  memset(st, 0, sizeof *st);
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block the open */
  if (fd < 0) return NULL;
  int e = 0;
  if (fstat(fd, st) != 0) e = errno;
  else if (!S_ISREG(st->st_mode)) e = EINVAL;
  else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) e = errno;
  FILE *f = e == 0 ? fdopen(fd, "rb") : NULL;
  if (f == NULL) {
    if (e == 0) e = errno;
    close(fd);
    errno = e;
  }
  return f;
}

size_t dt_rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0, resident = 0;
  const int got = f != NULL ? fscanf(f, "%lu %lu", &pages, &resident) : 0;
  if (f != NULL) fclose(f);
  const long page = sysconf(_SC_PAGESIZE);
  return got == 2 && page > 0 ? (size_t)resident * (size_t)page : 0;
}

static size_t rss_start;
/* rounded up to whole 8 MiB: the resident size at start moves by a few pages from one run to the
 * next (the environment, the stack), and check's figures should not move with it */
void dt_rss_mark_start(void) {
  const size_t grain = (size_t)8 << 20;
  rss_start = (dt_rss_bytes() + grain - 1) / grain * grain;
}
size_t dt_rss_at_start(void) { return rss_start; }

size_t dt_host_memory_bytes(void) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}
