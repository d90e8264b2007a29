/* What the data readers share (src/data): the SHA-256 that summary.yaml records for each file. */
#ifndef DT_DATA_IMPL_H
#define DT_DATA_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* SHA-256 of head (head_n bytes, may be 0) followed by data (n bytes), as 64 hex digits. */
void data_sha256_hex(const uint8_t *head, size_t head_n, const uint8_t *data, size_t n, char hex[65]);

#endif
