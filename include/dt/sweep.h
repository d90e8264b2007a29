/* Sweeps: a grid of experiments from one file. The top-level `sweep:` key (and `--sweep
 * KEY=V1,V2,...` on the command line) names axes; every point of their product is the file with
 * one value of each axis set, as `--set` would. An axis is either a config path with a list of
 * values
 *
 *     experiment.seed: [0, 1, 2]
 *
 * or a named group whose values each set several keys (`label:` names the value; without it the
 * values it sets, joined, do):
 *
 *     graph:
 *       - {experiment.graph.type: complete}
 *       - {label: random-0.7, experiment.graph.type: random, experiment.graph.fiedler: 0.7}
 *
 * Points are numbered in row-major order: the first axis varies slowest. */
#ifndef DT_SWEEP_H
#define DT_SWEEP_H

#include "dt/config.h"

enum { DT_SWEEP_MAX_AXES = 16, DT_SWEEP_MAX_POINTS = 10000, DT_SWEEP_MAX_VALUES = 1000, DT_SWEEP_MAX_SETS = 16 };

typedef struct dt_sweep_value {
  char *label;                        /* what tables, folders and the database show */
  int num_sets;                       /* the overrides it applies ("path=value") */
  char *sets[DT_SWEEP_MAX_SETS];
  char *origins[DT_SWEEP_MAX_SETS];   /* "FILE:LINE:COL: sweep KEY" or "--sweep KEY=..." */
} dt_sweep_value;

typedef struct dt_sweep_axis {
  char *key;   /* the config path, or the group's name */
  int num_values;
  dt_sweep_value *values;
} dt_sweep_axis;

typedef struct dt_sweep {
  char source[DT_PATH_MAX];
  char *text; /* the file */
  size_t len;
  int num_axes;
  dt_sweep_axis axes[DT_SWEEP_MAX_AXES];
  int num_points;
} dt_sweep;

/* Reads the `sweep:` key of the experiment file at path and adds the command line's axes
 * (cli[i] = "KEY=V1,V2,..."; one for a key the file sweeps replaces the file's axis). num_axes
 * = 0 when there is neither. Every point is not checked here: dt_sweep_point_config does.
 * Errors: DT_ERR_CONFIG at the offending line, DT_ERR_USAGE for a bad --sweep. Not collective. */
DT_MUST_USE dt_status dt_sweep_load(const char *path, const char *const *cli, int num_cli, dt_sweep *out);
void dt_sweep_free(dt_sweep *sw);

/* The value index of each axis at point p (idx has num_axes entries). */
void dt_sweep_point_index(const dt_sweep *sw, int p, int *idx);

/* The resolved config of point p: the file, then `sets` (the command line's --set), then the
 * point's values. Messages name the sweep value's line for its keys. */
DT_MUST_USE dt_status dt_sweep_point_config(const dt_sweep *sw, int p, const dt_registry *reg, const char *const *sets, int num_sets,
                                            dt_config *cfg);

#endif
