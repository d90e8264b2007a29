/* What the data readers share (src/data): the SHA-256 that summary.yaml records for each file. */
#ifndef DT_DATA_IMPL_H
#define DT_DATA_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "dt/data.h"

struct stat;

/* SHA-256 of head (head_n bytes, may be 0) followed by data (n bytes), as 64 hex digits. */
void data_sha256_hex(const uint8_t *head, size_t head_n, const uint8_t *data, size_t n, char hex[65]);

/* The digest cache (digest_cache.c): a file's identity from its stat; the digest of `kind` ("idx":
 * uncompressed IDX content) of the file id names, when an entry holds it (1) or not (0); storing
 * one (silently nothing where the cache cannot be written). */
void data_file_id(const struct stat *sb, dt_file_id *id);
int data_digest_cached(const dt_file_id *id, const char *kind, char hex[65]);
void data_digest_store(const dt_file_id *id, const char *kind, const char hex[65]);

#endif
