/* The resolved config written back as YAML (libyaml's emitter): every key of the tables with
 * its value, defaults included, so that loading the output gives the same dt_config; and the
 * archived copy a run folder keeps, whose relative paths are made absolute. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_impl.h"
#include "dt/yaml.h"

/* ---- emitting ------------------------------------------------------------------------------ */

/* A key flagged DT_KEY_EMIT_IF_SET that holds its default (bias: true, no name, a section whose
 * keys all hold theirs, ...). */
static int at_default(const dt_key *k, const void *base) {
  const void *v = (const char *)base + k->offset;
  switch (k->type) {
    case DT_KEY_SECTION:
      for (int r = 0; k->sub[r].name != NULL; r++)
        if ((k->sub[r].def != NULL || k->sub[r].type == DT_KEY_FLOATS) && !at_default(&k->sub[r], v)) return 0;
      return 1;
    case DT_KEY_ENUM: return *(const int *)v == 0;
    case DT_KEY_STRING: return ((const char *)v)[0] == '\0';
    case DT_KEY_INT: return *(const int *)v == atoi(k->def);
    case DT_KEY_FLOAT: return *(const double *)v == strtod(k->def, NULL);
    case DT_KEY_BOOL: return *(const bool *)v == (strcmp(k->def, "true") == 0);
    case DT_KEY_FLOATS: return ((const dt_floats *)v)->n == 0;
    default: return 0;
  }
}

/* Layers [first, end) of m as flow mappings in one sequence (block style at the top, flow
 * inside a residual's mapping); each type's keys in its definition's order. */
static void emit_layer_list(dt_yemit *em, const dt_model_config *m, int first, int end, int flow) {
  char buf[64];
  dt_yemit_seq(em, flow);
  for (int i = first; i < end;) {
    const dt_layer_spec *ls = &m->layers[i];
    const dt_key *keys = dt_layer_def_of(ls->kind)->keys;
    dt_yemit_map(em, 1);
    dt_yemit_scalar(em, "type", 0);
    dt_yemit_scalar(em, config_layer_names[ls->kind], 0);
    for (int r = 0; keys[r].name != NULL; r++) {
      const dt_key *k = &keys[r];
      if (k->type == DT_KEY_SPECIAL || ((k->flags & DT_KEY_EMIT_IF_SET) && at_default(k, ls))) continue;
      dt_yemit_scalar(em, k->name, 0);
      schema_format(k, ls, buf, sizeof buf);
      dt_yemit_scalar(em, buf, k->type == DT_KEY_STRING);
    }
    const int span = 1 + (ls->kind == DT_LAYER_RESIDUAL ? ls->children : 0);
    if (ls->kind == DT_LAYER_RESIDUAL) {
      dt_yemit_scalar(em, "layers", 0);
      emit_layer_list(em, m, i + 1, i + span, 1);
    }
    dt_yemit_end(em);
    i += span;
  }
  dt_yemit_end(em);
}

static void emit_layers(dt_yemit *em, const dt_model_config *m) {
  dt_yemit_scalar(em, "layers", 0);
  emit_layer_list(em, m, 0, m->num_layers, 0);
}

/* Where the running problem's options sit in an experiment config (base is one when a row is a
 * problem section): the other problems' sections are not written, as another algorithm's keys
 * are not. */
static size_t active_problem_offset(const void *experiment) {
  const dt_experiment_config *e = experiment;
  return offsetof(dt_experiment_config, problem_opts) + (size_t)e->problem_index * DT_PROBLEM_OPTS_MAX;
}

static void emit_rows(dt_yemit *em, const dt_key *keys, const void *base) {
  char buf[DT_PATH_MAX + 64];
  for (int i = 0; keys[i].name != NULL; i++) {
    const dt_key *k = &keys[i];
    if (keys == config_model_keys && k->type == DT_KEY_SPECIAL && ((const dt_model_config *)base)->num_layers > 0) {
      emit_layers(em, base);
      continue;
    }
    if ((k->flags & DT_KEY_NO_EMIT) || k->alias_of != NULL || k->type == DT_KEY_SPECIAL) continue;
    if ((k->flags & DT_KEY_EMIT_IF_SET) && at_default(k, base)) continue;
    if ((k->flags & DT_KEY_PROBLEM_SECTION) && k->offset != active_problem_offset(base)) continue;
    dt_yemit_scalar(em, k->name, 0);
    if (k->type == DT_KEY_SECTION) {
      dt_yemit_map(em, 0);
      emit_rows(em, k->sub, (const char *)base + k->offset);
      dt_yemit_end(em);
      continue;
    }
    if (k->type == DT_KEY_FLOATS) { /* a flow list of the numbers */
      const dt_floats *f = (const void *)((const char *)base + k->offset);
      const dt_key item = {.type = DT_KEY_FLOAT};
      dt_yemit_seq(em, 1);
      for (int j = 0; j < f->n; j++) {
        schema_format(&item, &f->v[j], buf, sizeof buf);
        dt_yemit_scalar(em, buf, 0);
      }
      dt_yemit_end(em);
      continue;
    }
    schema_format(k, base, buf, sizeof buf);
    dt_yemit_scalar(em, buf, k->type == DT_KEY_STRING);
  }
}

static dt_status emit_config(const dt_config *cfg, const dt_registry *reg, FILE *f) {
  experiment_table t;
  DT_TRY(config_experiment_table_make(reg, &t));
  dt_yemit *em = NULL;
  DT_TRY(dt_yemit_begin(f, &em));
  dt_yemit_map(em, 0);
  dt_yemit_scalar(em, "experiment", 0);
  dt_yemit_map(em, 0);
  const dt_experiment_config *e = &cfg->experiment;
  emit_rows(em, t.rows, e);
  dt_yemit_end(em);
  dt_yemit_scalar(em, "problem_configs", 0);
  dt_yemit_map(em, 0);
  for (int p = 0; p < cfg->num_problems; p++) {
    const dt_problem_config *pc = &cfg->problems[p];
    const dt_plugin *def = config_optimizer_named(reg, pc->alg_name);
    dt_yemit_scalar(em, pc->key, 1);
    dt_yemit_map(em, 0);
    emit_rows(em, config_problem_keys, pc);
    dt_yemit_scalar(em, "metrics", 0);
    dt_yemit_seq(em, 1);
    for (int b = 0; b < DT_METRIC_COUNT_; b++)
      if (pc->metrics & (1u << b)) dt_yemit_scalar(em, config_metric_names[b], 0);
    dt_yemit_end(em);
    dt_yemit_scalar(em, "optimizer_config", 0);
    dt_yemit_map(em, 0);
    dt_yemit_scalar(em, "alg_name", 0);
    dt_yemit_scalar(em, pc->alg_name, 0);
    emit_rows(em, config_optimizer_common_keys, pc);
    if (def != NULL) emit_rows(em, def->keys, pc->alg_opts);
    dt_yemit_end(em);
    dt_yemit_end(em);
  }
  return dt_yemit_finish(em, "the resolved config");
}

dt_status dt_config_emit(const dt_config *cfg, const dt_registry *reg, FILE *f) { return emit_config(cfg, reg, f); }

/* ---- the archived copy ---------------------------------------------------------------------- */

/* path made absolute against the working directory (loading made every relative path relative to
 * it), unless it is absolute or empty already. */
static void absolute(char *path, size_t size) {
  if (path[0] == '\0' || path[0] == '/') return;
  char cwd[DT_PATH_MAX], out[2 * DT_PATH_MAX + 2];
  if (getcwd(cwd, sizeof cwd) == NULL) return; /* left as it is: it still works from here */
  snprintf(out, sizeof out, "%s/%s", cwd, strncmp(path, "./", 2) == 0 ? path + 2 : path);
  if (strlen(out) < size) snprintf(path, size, "%s", out);
}

dt_status dt_config_emit_archive(const dt_config *cfg, const dt_registry *reg, FILE *f) {
  dt_config *a = malloc(sizeof *a);
  DT_CHECK(a != NULL, DT_ERR_MEMORY, "out of memory");
  *a = *cfg;
  absolute(a->experiment.data_dir, sizeof a->experiment.data_dir);
  absolute(a->experiment.output_metadir, sizeof a->experiment.output_metadir);
  absolute(a->experiment.graph.edge_file, sizeof a->experiment.graph.edge_file);
  absolute(a->experiment.model.init_file, sizeof a->experiment.model.init_file);
  absolute(a->experiment.batch_order, sizeof a->experiment.batch_order);
  dt_status st = dt_config_emit(a, reg, f);
  free(a);
  return st;
}
