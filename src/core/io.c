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
