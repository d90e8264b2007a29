/* The data files' SHA-256 cached by file identity, so that a run does not hash an unchanged
 * dataset again (MNIST's 55 MB took 35-40 ms of SHA-NI on a thread that the first checkpoint waits
 * for: a sixth of a 1-node, 1-round run). The key is what stat(2) says of the file — device,
 * inode, size, modification and change time in nanoseconds — taken before and after the file was
 * read (data_file_id). Any write to a file, and any chmod, rename or touch, sets its change time
 * to the clock's, which no user call can set back, so a changed file never matches an entry and is
 * hashed again; this is the test make, git and ccache rely on, with the change time added.
 *
 * An entry is one file, DIR/<dev>-<ino>-<size>-<mtime>-<ctime>.<kind>, holding the 64 hex digits
 * and a newline, written to a temporary name and renamed into place (concurrent runs on one host
 * write the same bytes). DIR is $XDG_CACHE_HOME/dtrun/digests, else ~/.cache/dtrun/digests;
 * DT_DIGEST_CACHE=0 turns the cache off. It is only an optimisation: anything that fails (no
 * home, a read-only disk, a damaged entry) means the digest is computed, and nothing else. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_impl.h"

void data_file_id(const struct stat *sb, dt_file_id *id) {
  memset(id, 0, sizeof *id);
  id->dev = (uint64_t)sb->st_dev;
  id->ino = (uint64_t)sb->st_ino;
  id->size = (uint64_t)sb->st_size;
  id->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
  id->ctime_ns = (int64_t)sb->st_ctim.tv_sec * 1000000000 + sb->st_ctim.tv_nsec;
  id->known = 1;
}

/* The cache's folder into dir; 0 when there is none (turned off, or no home). */
static int cache_dir(char *dir, size_t size) {
  const char *off = getenv("DT_DIGEST_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (off != NULL && strcmp(off, "0") == 0) return 0;
  int n;
  if (xdg != NULL && xdg[0] == '/') n = snprintf(dir, size, "%s/dtrun/digests", xdg);
  else if (home != NULL && home[0] == '/') n = snprintf(dir, size, "%s/.cache/dtrun/digests", home);
  else return 0;
  return n > 0 && (size_t)n < size;
}

/* The entry of file id's digest of kind into path, its folder into dir; 0 when there is none. */
static int entry_path(const dt_file_id *id, const char *kind, char dir[4096], char *path, size_t size) {
  if (!id->known || !cache_dir(dir, 4096)) return 0;
  const int n = snprintf(path, size, "%s/%" PRIu64 "-%" PRIu64 "-%" PRIu64 "-%" PRId64 "-%" PRId64 ".%s", dir, id->dev, id->ino,
                         id->size, id->mtime_ns, id->ctime_ns, kind);
  return n > 0 && (size_t)n < size;
}

int data_digest_cached(const dt_file_id *id, const char *kind, char hex[65]) {
  char dir[4096], path[4400], buf[66];
  if (!entry_path(id, kind, dir, path, sizeof path)) return 0;
  const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  const ssize_t got = read(fd, buf, sizeof buf);
  close(fd);
  if (got != 65 || buf[64] != '\n') return 0; /* a damaged or foreign entry: computed again */
  for (int i = 0; i < 64; i++)
    if (!((buf[i] >= '0' && buf[i] <= '9') || (buf[i] >= 'a' && buf[i] <= 'f'))) return 0;
  memcpy(hex, buf, 64);
  hex[64] = '\0';
  return 1;
}

/* mkdir -p of the cache's folder (its parents are the user's: made 0700 like XDG's own). */
static int make_dirs(char *dir) {
  for (char *p = dir + 1; *p != '\0'; p++) {
    if (*p != '/') continue;
    *p = '\0';
    const int ok = mkdir(dir, 0700) == 0 || errno == EEXIST;
    *p = '/';
    if (!ok) return 0;
  }
  return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

void data_digest_store(const dt_file_id *id, const char *kind, const char hex[65]) {
  char path[4400], tmp[4500], dir[4096];
  if (!entry_path(id, kind, dir, path, sizeof path) || !make_dirs(dir)) return;
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  char line[65];
  memcpy(line, hex, 64);
  line[64] = '\n';
  const int ok = write(fd, line, sizeof line) == (ssize_t)sizeof line;
  if (close(fd) != 0 || !ok || rename(tmp, path) != 0) unlink(tmp);
}
