/* The resolved config written back as YAML (libyaml's emitter): every key of the tables with
 * its value, defaults included, so that loading the output gives the same dt_config; and the
 * archived copy a run folder keeps, whose relative paths are made absolute. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "config_impl.h"

/* ---- emitting ------------------------------------------------------------------------------ */

typedef struct emitter {
  yaml_emitter_t e;
  int ok;
} emitter;

static void ev_scalar(emitter *em, const char *text, int quoted) {
  yaml_event_t ev;
  if (!em->ok) return;
  yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), !quoted, quoted,
                               quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE);
  em->ok = yaml_emitter_emit(&em->e, &ev);
}

static void ev_map(emitter *em, int start, int flow) {
  yaml_event_t ev;
  if (!em->ok) return;
  if (start) yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
  else yaml_mapping_end_event_initialize(&ev);
  em->ok = yaml_emitter_emit(&em->e, &ev);
}

static void ev_seq(emitter *em, int start, int flow) {
  yaml_event_t ev;
  if (!em->ok) return;
  if (start) yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
  else yaml_sequence_end_event_initialize(&ev);
  em->ok = yaml_emitter_emit(&em->e, &ev);
}

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
static void emit_layer_list(emitter *em, const dt_model_config *m, int first, int end, int flow) {
  char buf[64];
  ev_seq(em, 1, flow);
  for (int i = first; i < end;) {
    const dt_layer_spec *ls = &m->layers[i];
    const dt_key *keys = dt_layer_def_of(ls->kind)->keys;
    ev_map(em, 1, 1);
    ev_scalar(em, "type", 0);
    ev_scalar(em, config_layer_names[ls->kind], 0);
    for (int r = 0; keys[r].name != NULL; r++) {
      const dt_key *k = &keys[r];
      if (k->type == DT_KEY_SPECIAL || ((k->flags & DT_KEY_EMIT_IF_SET) && at_default(k, ls))) continue;
      ev_scalar(em, k->name, 0);
      schema_format(k, ls, buf, sizeof buf);
      ev_scalar(em, buf, k->type == DT_KEY_STRING);
    }
    const int span = 1 + (ls->kind == DT_LAYER_RESIDUAL ? ls->children : 0);
    if (ls->kind == DT_LAYER_RESIDUAL) {
      ev_scalar(em, "layers", 0);
      emit_layer_list(em, m, i + 1, i + span, 1);
    }
    ev_map(em, 0, 1);
    i += span;
  }
  ev_seq(em, 0, flow);
}

static void emit_layers(emitter *em, const dt_model_config *m) {
  ev_scalar(em, "layers", 0);
  emit_layer_list(em, m, 0, m->num_layers, 0);
}

/* Where the running problem's options sit in an experiment config (base is one when a row is a
 * problem section): the other problems' sections are not written, as another algorithm's keys
 * are not. */
static size_t active_problem_offset(const void *experiment) {
  const dt_experiment_config *e = experiment;
  return offsetof(dt_experiment_config, problem_opts) + (size_t)e->problem_index * DT_PROBLEM_OPTS_MAX;
}

static void emit_rows(emitter *em, const dt_key *keys, const void *base) {
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
    ev_scalar(em, k->name, 0);
    if (k->type == DT_KEY_SECTION) {
      ev_map(em, 1, 0);
      emit_rows(em, k->sub, (const char *)base + k->offset);
      ev_map(em, 0, 0);
      continue;
    }
    if (k->type == DT_KEY_FLOATS) { /* a flow list of the numbers */
      const dt_floats *f = (const void *)((const char *)base + k->offset);
      const dt_key item = {.type = DT_KEY_FLOAT};
      ev_seq(em, 1, 1);
      for (int j = 0; j < f->n; j++) {
        schema_format(&item, &f->v[j], buf, sizeof buf);
        ev_scalar(em, buf, 0);
      }
      ev_seq(em, 0, 1);
      continue;
    }
    schema_format(k, base, buf, sizeof buf);
    ev_scalar(em, buf, k->type == DT_KEY_STRING);
  }
}

static int write_handler(void *data, unsigned char *buffer, size_t size) {
  return fwrite(buffer, 1, size, (FILE *)data) == size;
}

/* A relative edge_file is relative to the config file's folder: the emitted config (a run's
 * archived config.yaml, which re-runs and resumes from the run folder) names it absolutely. */
static dt_status absolute_edge_file(const dt_config *cfg, dt_config **copy) {
  const char *ef = cfg->experiment.graph.edge_file;
  *copy = NULL;
  if (ef[0] == '\0' || ef[0] == '/') return DT_OK;
  char dir[DT_PATH_MAX], abs[2 * DT_PATH_MAX + 2];
  snprintf(dir, sizeof dir, "%s", cfg->source);
  char *slash = strrchr(dir, '/');
  if (slash != NULL) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  char *real = realpath(dir, NULL);
  const int n = snprintf(abs, sizeof abs, "%s/%s", real != NULL ? real : dir, ef);
  free(real);
  if (n < 0 || (size_t)n >= sizeof cfg->experiment.graph.edge_file) {
    const dt_status st = DT_ERROR(DT_ERR_CONFIG, "%s: experiment.graph.edge_file '%s' is longer than %zu characters as an absolute path",
                                  cfg->source, ef, sizeof cfg->experiment.graph.edge_file - 1);
    return dt_error_set_where(dt_error_set_key(st, "experiment.graph.edge_file"), cfg->source, 0, 0);
  }
  *copy = malloc(sizeof **copy);
  DT_CHECK(*copy != NULL, DT_ERR_MEMORY, "out of memory");
  memcpy(*copy, cfg, sizeof **copy);
  snprintf((*copy)->experiment.graph.edge_file, sizeof (*copy)->experiment.graph.edge_file, "%s", abs);
  return DT_OK;
}

static dt_status emit_config(const dt_config *cfg, const dt_registry *reg, FILE *f) {
  emitter em = {.ok = 1};
  experiment_table t;
  DT_TRY(config_experiment_table_make(reg, &t));
  yaml_event_t ev;
  DT_CHECK(yaml_emitter_initialize(&em.e), DT_ERR_MEMORY, "cannot initialise the YAML emitter");
  yaml_emitter_set_output(&em.e, write_handler, f);
  yaml_emitter_set_width(&em.e, 100);
  yaml_emitter_set_unicode(&em.e, 1);
  yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
  em.ok = yaml_emitter_emit(&em.e, &ev);
  if (em.ok) {
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    em.ok = yaml_emitter_emit(&em.e, &ev);
  }
  ev_map(&em, 1, 0);
  ev_scalar(&em, "experiment", 0);
  ev_map(&em, 1, 0);
  const dt_experiment_config *e = &cfg->experiment;
  emit_rows(&em, t.rows, e);
  ev_map(&em, 0, 0);
  ev_scalar(&em, "problem_configs", 0);
  ev_map(&em, 1, 0);
  for (int p = 0; p < cfg->num_problems; p++) {
    const dt_problem_config *pc = &cfg->problems[p];
    const dt_plugin *def = config_optimizer_named(reg, pc->alg_name);
    ev_scalar(&em, pc->key, 1);
    ev_map(&em, 1, 0);
    emit_rows(&em, config_problem_keys, pc);
    ev_scalar(&em, "metrics", 0);
    ev_seq(&em, 1, 1);
    for (int b = 0; b < DT_METRIC_COUNT_; b++)
      if (pc->metrics & (1u << b)) ev_scalar(&em, config_metric_names[b], 0);
    ev_seq(&em, 0, 1);
    ev_scalar(&em, "optimizer_config", 0);
    ev_map(&em, 1, 0);
    ev_scalar(&em, "alg_name", 0);
    ev_scalar(&em, pc->alg_name, 0);
    emit_rows(&em, config_optimizer_common_keys, pc);
    if (def != NULL) emit_rows(&em, def->keys, pc->alg_opts);
    ev_map(&em, 0, 0);
    ev_map(&em, 0, 0);
  }
  ev_map(&em, 0, 0);
  ev_map(&em, 0, 0);
  if (em.ok) {
    yaml_document_end_event_initialize(&ev, 1);
    em.ok = yaml_emitter_emit(&em.e, &ev);
  }
  if (em.ok) {
    yaml_stream_end_event_initialize(&ev);
    em.ok = yaml_emitter_emit(&em.e, &ev);
  }
  int ok = em.ok && yaml_emitter_flush(&em.e);
  yaml_emitter_delete(&em.e);
  DT_CHECK(ok && !ferror(f), DT_ERR_IO, "error writing the resolved config");
  return DT_OK;
}

dt_status dt_config_emit(const dt_config *cfg, const dt_registry *reg, FILE *f) {
  dt_config *copy;
  DT_TRY(absolute_edge_file(cfg, &copy));
  const dt_status st = emit_config(copy != NULL ? copy : cfg, reg, f);
  free(copy);
  return st;
}

/* ---- the archived copy ---------------------------------------------------------------------- */

/* path made absolute: against `base` (a folder, itself made absolute against the working
 * directory), unless it is absolute or empty already. */
static void absolute(char *path, size_t size, const char *base) {
  if (path[0] == '\0' || path[0] == '/') return;
  char cwd[DT_PATH_MAX], out[3 * DT_PATH_MAX + 8];
  if (getcwd(cwd, sizeof cwd) == NULL) return; /* left as it is: it still works from here */
  if (base == NULL || base[0] == '\0' || strcmp(base, ".") == 0) snprintf(out, sizeof out, "%s/%s", cwd, path);
  else if (base[0] == '/') snprintf(out, sizeof out, "%s/%s", base, path);
  else snprintf(out, sizeof out, "%s/%s/%s", cwd, base, path);
  const char *p = out;
  while (strncmp(p, "./", 2) == 0) p += 2;
  if (strlen(p) < size) snprintf(path, size, "%s", p);
}

dt_status dt_config_emit_archive(const dt_config *cfg, const dt_registry *reg, FILE *f) {
  dt_config *a = malloc(sizeof *a);
  DT_CHECK(a != NULL, DT_ERR_MEMORY, "out of memory");
  *a = *cfg;
  char dir[DT_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", cfg->source);
  char *slash = strrchr(dir, '/');
  if (slash != NULL) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  absolute(a->experiment.data_dir, sizeof a->experiment.data_dir, NULL);
  absolute(a->experiment.output_metadir, sizeof a->experiment.output_metadir, NULL);
  absolute(a->experiment.graph.edge_file, sizeof a->experiment.graph.edge_file, dir); /* relative to the config file */
  dt_status st = dt_config_emit(a, reg, f);
  free(a);
  return st;
}
