/* An in-memory file holding a fuzz input, opened by path (/proc/self/fd/N) like a real file. */
#ifndef DT_FUZZ_MEMFILE_H
#define DT_FUZZ_MEMFILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static inline int memfile(const uint8_t *data, size_t size, char *path, size_t path_size) {
  const int fd = memfd_create("fuzz", 0);
  if (fd < 0) abort();
  for (size_t done = 0; done < size;) {
    const ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) abort();
    done += (size_t)w;
  }
  snprintf(path, path_size, "/proc/self/fd/%d", fd);
  return fd;
}

static inline void memfile_close(int fd) { close(fd); }

#endif
