/* dt_yemit: libyaml's emitter behind a few calls, so that every YAML file dtrun writes (the
 * resolved config, summary.yaml, graph.yaml, sweep.yaml) is emitted, not printed: quoting is
 * the emitter's, numbers are the shortest text that reads back exactly (dt_yaml_double). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "dt/yaml.h"

enum { YEMIT_MAX_DEPTH = 32 };

struct dt_yemit {
  yaml_emitter_t e;
  FILE *f;
  int ok, depth;
  int stopped;   /* the signal that stopped a long document (dt_stop_requested) */
  unsigned tick; /* events since the signal was last looked at */
  char open[YEMIT_MAX_DEPTH]; /* 'm' or 's' per open collection */
};

static int write_handler(void *data, unsigned char *buffer, size_t size) {
  return fwrite(buffer, 1, size, (FILE *)data) == size;
}

/* A stop signal ends a document early (graph.yaml of a complete graph of 4,096 nodes is half a
 * gigabyte, minutes of text): dt_yemit_finish reports it as DT_ERR_INTERRUPTED. */
static void emit(dt_yemit *y, yaml_event_t *ev) {
  if (y->ok && ++y->tick % 65536 == 0 && (y->stopped = dt_stop_requested()) != 0) y->ok = 0;
  if (y->ok) y->ok = yaml_emitter_emit(&y->e, ev);
  else yaml_event_delete(ev);
}

dt_status dt_yemit_begin(FILE *f, dt_yemit **out) {
  dt_yemit *y = calloc(1, sizeof *y);
  DT_CHECK(y != NULL, DT_ERR_MEMORY, "out of memory");
  if (!yaml_emitter_initialize(&y->e)) {
    free(y);
    return DT_ERROR(DT_ERR_MEMORY, "cannot initialise the YAML emitter");
  }
  y->f = f;
  y->ok = 1;
  yaml_emitter_set_output(&y->e, write_handler, f);
  yaml_emitter_set_width(&y->e, 100);
  yaml_emitter_set_unicode(&y->e, 1);
  yaml_event_t ev;
  yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
  emit(y, &ev);
  yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
  emit(y, &ev);
  *out = y;
  return DT_OK;
}

static void open_collection(dt_yemit *y, char kind, int flow) {
  if (!y->ok) return;
  if (y->depth == YEMIT_MAX_DEPTH) {
    y->ok = 0;
    return;
  }
  yaml_event_t ev;
  if (kind == 'm') yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
  else yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
  emit(y, &ev);
  y->open[y->depth++] = kind;
}

void dt_yemit_map(dt_yemit *y, int flow) { open_collection(y, 'm', flow); }
void dt_yemit_seq(dt_yemit *y, int flow) { open_collection(y, 's', flow); }

void dt_yemit_end(dt_yemit *y) {
  if (!y->ok || y->depth == 0) {
    y->ok = 0;
    return;
  }
  yaml_event_t ev;
  if (y->open[--y->depth] == 'm') yaml_mapping_end_event_initialize(&ev);
  else yaml_sequence_end_event_initialize(&ev);
  emit(y, &ev);
}

void dt_yemit_scalar(dt_yemit *y, const char *text, int quoted) {
  if (!y->ok) return;
  yaml_event_t ev;
  if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), !quoted, quoted,
                                    quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE)) {
    y->ok = 0;
    return;
  }
  emit(y, &ev);
}

/* Whether a plain scalar of text could read back as something other than that string: empty,
 * null, a YAML 1.1 boolean, .inf or .nan, or anything that starts like a number (ints, floats,
 * 0x1f, 0b101, sexagesimal 1:20, dates and timestamps: YAML 1.1 readers resolve them all). */
static int needs_quotes(const char *text) {
  if (text[0] == '\0') return 1;
  static const char *const words[] = {"~", "null", "true", "false", "yes", "no", "on", "off", "y", "n"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcasecmp(text, words[i]) == 0) return 1;
  const char *p = text + (text[0] == '+' || text[0] == '-');
  if (strcasecmp(p, ".inf") == 0 || strcasecmp(p, ".nan") == 0) return 1;
  return (p[0] >= '0' && p[0] <= '9') || (p[0] == '.' && p[1] >= '0' && p[1] <= '9');
}

void dt_yemit_str(dt_yemit *y, const char *text) { dt_yemit_scalar(y, text, needs_quotes(text)); }

void dt_yemit_int(dt_yemit *y, long long v) { /* by hand: graph.yaml writes tens of millions of them */
  char buf[32], *p = buf + sizeof buf;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  *--p = '\0';
  do *--p = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (v < 0) *--p = '-';
  dt_yemit_scalar(y, p, 0);
}

void dt_yemit_double(dt_yemit *y, double v) {
  char buf[32];
  dt_yemit_scalar(y, dt_yaml_double(v, buf, sizeof buf), 0);
}

void dt_yemit_fixed(dt_yemit *y, double v, int decimals) {
  char buf[64];
  if (!isfinite(v)) dt_yaml_double(v, buf, sizeof buf);
  else snprintf(buf, sizeof buf, "%.*f", decimals, v);
  dt_yemit_scalar(y, buf, 0);
}

dt_status dt_yemit_finish(dt_yemit *y, const char *what) {
  while (y->ok && y->depth > 0) dt_yemit_end(y);
  yaml_event_t ev;
  yaml_document_end_event_initialize(&ev, 1);
  emit(y, &ev);
  yaml_stream_end_event_initialize(&ev);
  emit(y, &ev);
  const int ok = y->ok && yaml_emitter_flush(&y->e) && !ferror(y->f);
  const int stopped = y->stopped;
  yaml_emitter_delete(&y->e);
  free(y);
  DT_CHECK(!stopped, DT_ERR_INTERRUPTED, "interrupted by signal %d while writing %s", stopped, what);
  DT_CHECK(ok, DT_ERR_IO, "error writing %s", what);
  return DT_OK;
}
