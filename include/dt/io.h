/* Opening input files that may be anything a user names: a FIFO must not block the open, and a
 * device such as /dev/zero, which never ends, must not be read. */
#ifndef DT_IO_H
#define DT_IO_H

#include <stdio.h>
#include <sys/stat.h>

/* path opened for reading when it is a regular file; NULL with errno EINVAL when it is not (a
 * folder, a FIFO, whose open does not block here, a device or a socket), or the open's errno.
 * st (may be NULL) receives the open file's status whenever the file could be opened, so that a
 * caller can tell a folder (S_ISDIR) or check the size (st_size) without a second look. */
FILE *dt_open_regular(const char *path, struct stat *st);

/* This process's resident memory in bytes now (/proc/self/statm; 0 where it cannot be read), and
 * as dt_rss_mark_start recorded it when the program started (the baseline of `dtrun check`'s
 * memory estimate: libraries and runtime, before any data), rounded up to whole 8 MiB so the
 * estimate does not move with the few pages a run's environment adds. */
size_t dt_rss_bytes(void);
void dt_rss_mark_start(void);
size_t dt_rss_at_start(void);
/* The host's physical memory in bytes (0 where unknown). */
size_t dt_host_memory_bytes(void);

#endif
