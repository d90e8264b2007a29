/* The output folder: --output-dir exactly, or <output_metadir>/<time>_<name>, with _2, _3, ...
 * when that exists already (two runs started in the same second); for `dtrun resume`, the run's
 * own folder. Rank 0 holds the folder's lock (dtrun.lock: pid, host, start time, under flock)
 * for the whole run, so a second run into the same folder is refused instead of interleaving
 * its files, and a run that died is told apart from one that is running. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner_impl.h"

static dt_status mkdir_p(const char *path) {
  char buf[DT_PATH_MAX + 64];
  DT_CHECK(strlen(path) < sizeof buf, DT_ERR_USAGE, "output folder name is longer than %zu characters: %.80s...", sizeof buf - 1, path);
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return DT_ERROR(DT_ERR_IO, "cannot create folder %s: %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) return DT_ERROR(DT_ERR_IO, "cannot create folder %s: %s", buf, strerror(errno));
  struct stat sb;
  DT_CHECK(stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode), DT_ERR_CONFIG, "output folder %s exists and is not a folder", buf);
  return DT_OK;
}

/* The first entry of dir other than ., .. and `ignore` into first (empty when there is none). */
static void first_entry(const char *dir, const char *ignore, char *first, size_t size) {
  first[0] = '\0';
  DIR *d = opendir(dir);
  if (d == NULL) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || strcmp(e->d_name, ignore) == 0) continue;
    snprintf(first, size, "%s", e->d_name);
    break;
  }
  closedir(d);
}

/* Reads who holds dir's lock file into holder ("pid N on host H since T"). */
static void lock_holder(const char *path, char *holder, size_t size) {
  char text[512] = "";
  FILE *f = fopen(path, "r");
  if (f != NULL) {
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
  }
  long pid = 0;
  char host[256] = "?", since[64] = "?";
  for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    if (sscanf(line, "pid: %ld", &pid) == 1) continue;
    if (sscanf(line, "host: %255s", host) == 1) continue;
    if (sscanf(line, "started: %63s", since) == 1) continue;
  }
  snprintf(holder, size, "pid %ld on host %s since %s", pid, host, since);
}

/* Takes dir's lock, or fails naming the run that holds it. */
static dt_status lock_dir(runner *r, const char *dir) {
  char path[DT_PATH_MAX + 96];
  snprintf(path, sizeof path, "%s/dtrun.lock", dir);
  const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  DT_CHECK(fd >= 0, DT_ERR_IO, "cannot create %s: %s", path, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    close(fd);
    if (e == EWOULDBLOCK) {
      char holder[512];
      lock_holder(path, holder, sizeof holder);
      return DT_ERROR(DT_ERR_USAGE, "%s is in use by another dtrun (%s); choose another --output-dir", dir, holder);
    }
    return DT_ERROR(DT_ERR_IO, "cannot lock %s: %s", path, strerror(e));
  }
  char host[256], text[512];
  dt_comm_host(host, sizeof host);
  const int n = snprintf(text, sizeof text, "pid: %ld\nhost: %s\nstarted: %s\n", (long)getpid(), host, r->started);
  if (ftruncate(fd, 0) != 0 || write(fd, text, (size_t)n) != n) {
    const int e = errno;
    close(fd);
    return DT_ERROR(DT_ERR_IO, "cannot write %s: %s", path, strerror(e));
  }
  r->lock_fd = fd;
  return DT_OK;
}

void runner_unlock(runner *r) {
  if (r->lock_fd < 0) return;
  char path[DT_PATH_MAX + 96];
  snprintf(path, sizeof path, "%s/dtrun.lock", r->outdir);
  unlink(path); /* while still holding it: nobody can take a lock on a file about to vanish */
  close(r->lock_fd);
  r->lock_fd = -1;
}

/* --output-dir DIR: made if missing; an existing folder must be empty unless --force (or it is
 * the run being resumed). */
static dt_status given_dir(runner *r) {
  const dt_run_options *o = r->opt;
  DT_CHECK(strlen(o->output_dir) < sizeof r->outdir, DT_ERR_USAGE, "--output-dir is longer than %zu characters", sizeof r->outdir - 1);
  snprintf(r->outdir, sizeof r->outdir, "%s", o->output_dir);
  if (o->resume) {
    struct stat sb;
    DT_CHECK(stat(r->outdir, &sb) == 0 && S_ISDIR(sb.st_mode), DT_ERR_USAGE, "%s is not a run folder", r->outdir);
    return lock_dir(r, r->outdir);
  }
  DT_TRY(mkdir_p(r->outdir));
  DT_TRY(lock_dir(r, r->outdir));
  char first[256];
  first_entry(r->outdir, "dtrun.lock", first, sizeof first); /* the lock we just made does not count */
  if (first[0] != '\0' && !o->force) {
    runner_unlock(r);
    return DT_ERROR(DT_ERR_USAGE,
                    "--output-dir %s is not empty (it holds %s): add --force to write into it anyway, or continue the run "
                    "there with dtrun resume %s",
                    r->outdir, first, r->outdir);
  }
  /* --force: a checkpoint of an earlier run there must not be taken for this one's */
  return runner_checkpoint_remove(r);
}

dt_status runner_mkdir_p(const char *path) { return mkdir_p(path); }

dt_status runner_stamped_folder(const char *metadir, const char *name, char *out, size_t size) {
  char stamp[64];
  dt_time_local(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S");
  DT_TRY(mkdir_p(metadir));
  for (int k = 1;; k++) {
    int n;
    if (k == 1) n = snprintf(out, size, "%s/%s_%s", metadir, stamp, name);
    else n = snprintf(out, size, "%s/%s_%s_%d", metadir, stamp, name, k);
    /* a name cut short would collide with itself forever: refuse it instead */
    DT_CHECK(n >= 0 && (size_t)n < size, DT_ERR_CONFIG,
             "the output folder %s/%s_%s would be longer than %zu characters: shorten experiment.output_metadir or experiment.name",
             metadir, stamp, name, size - 1);
    DT_CHECK(k < 10000, DT_ERR_IO, "cannot find a free folder name like %s in %s", out, metadir);
    if (mkdir(out, 0777) == 0) return DT_OK;
    DT_CHECK(errno == EEXIST, DT_ERR_IO, "cannot create folder %s: %s", out, strerror(errno));
  }
}

/* <output_metadir>/<time>_<name>, made unique. */
static dt_status stamped_dir(runner *r) {
  const dt_experiment_config *e = &r->cfg->experiment;
  DT_TRY(runner_stamped_folder(e->output_metadir, e->name, r->outdir, sizeof r->outdir));
  return lock_dir(r, r->outdir);
}

dt_status dt_output_check(const dt_config *cfg) {
  const char *dir = cfg->experiment.output_metadir, *key = "experiment.output_metadir";
  /* <metadir>/<YYYY-MM-DD_HH-MM-SS>_<name>_<k> must fit the folder name's buffer */
  const size_t longest = strlen(dir) + 1 + 19 + 1 + strlen(cfg->experiment.name) + 5;
  DT_CHECK_KEY(longest < sizeof ((runner *)0)->outdir, DT_ERR_CONFIG, key,
               "%s: run folders in '%.60s...' would have names of up to %zu characters, more than %zu: "
               "shorten experiment.output_metadir or experiment.name",
               key, dir, longest, sizeof ((runner *)0)->outdir - 1);
  const dt_status st = dt_folder_usable(key, dir, 1, DT_ERR_CONFIG);
  return st == DT_OK ? DT_OK : dt_error_set_key(st, "%s", key);
}

dt_status dt_folder_usable(const char *what, const char *dir, int parents, dt_status code) {
  char probe[DT_PATH_MAX];
  struct stat sb;
  DT_CHECK(strlen(dir) < sizeof probe, code, "%s: a folder name longer than %zu characters: %.60s...", what, sizeof probe - 1, dir);
  snprintf(probe, sizeof probe, "%s", dir[0] != '\0' ? dir : ".");
  /* the folder, or the nearest existing folder it would be made in */
  int missing = 0;
  while (stat(probe, &sb) != 0) {
    /* ENOTDIR: a part above is a file, which the walk up reaches and names */
    DT_CHECK(errno == ENOENT || errno == ENOTDIR, code, "%s: cannot use '%s': %s: %s", what, dir, probe, strerror(errno));
    missing++;
    char *slash = strrchr(probe, '/');
    if (slash == NULL) snprintf(probe, sizeof probe, ".");
    else if (slash == probe) probe[1] = '\0';
    else *slash = '\0';
  }
  DT_CHECK(S_ISDIR(sb.st_mode), code, "%s: '%s' cannot be made: %s is a file, not a folder", what, dir, probe);
  if (!parents && missing > 1) { /* the part of dir below probe: what mkdir would have to make first */
    const size_t n = strlen(probe);
    const char *below = strncmp(dir, probe, n) == 0 ? dir + n + (dir[n] == '/') : dir;
    return DT_ERROR(code, "%s: '%s' cannot be made: %s has no folder %s in it", what, dir, probe, below);
  }
  DT_CHECK(access(probe, W_OK | X_OK) == 0, code, "%s: '%s' cannot be written: %s: %s", what, dir, probe, strerror(errno));
  return DT_OK;
}

dt_status runner_make_outdir(runner *r) {
  dt_status st = DT_OK;
  if (r->rank == 0 && r->opt->output_dir == NULL) st = dt_config_positioned(r->cfg, dt_output_check(r->cfg));
  if (r->rank == 0 && st == DT_OK) st = r->opt->output_dir != NULL ? given_dir(r) : stamped_dir(r);
  /* every rank learns the outcome, so a failure stops all of them together */
  double ok = st == DT_OK ? 1 : 0;
  DT_TRY(dt_comm_allreduce_min_f64(r->comm, &ok, 1));
  if (st != DT_OK) return st;
  DT_CHECK(ok == 1, DT_ERR_IO, "rank 0 could not create the output folder");
  /* the other ranks need the folder's name too (they report it) */
  return dt_comm_bcast(r->comm, r->outdir, sizeof r->outdir, 0);
}

/* ---- what a run folder's state is ------------------------------------------------------------ */

void dt_run_dir_status(const char *dir, char *status, size_t size, char *holder, size_t holder_size) {
  char path[DT_PATH_MAX + 96], line[512];
  snprintf(status, size, "unknown");
  if (holder_size > 0) holder[0] = '\0';
  snprintf(path, sizeof path, "%s/summary.yaml", dir);
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  while (fgets(line, sizeof line, f) != NULL) {
    char word[64];
    if (sscanf(line, "status: %63s", word) == 1) { /* the run's own status is the first, unindented one */
      snprintf(status, size, "%s", word);
      break;
    }
  }
  fclose(f);
  if (strcmp(status, "running") != 0) return;
  snprintf(path, sizeof path, "%s/dtrun.lock", dir);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(status, size, "killed");
    return;
  }
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    snprintf(status, size, "killed"); /* nobody holds it: the writer died without a word */
  } else {
    lock_holder(path, holder, holder_size);
  }
  close(fd);
}
