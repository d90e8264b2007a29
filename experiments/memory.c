/* The memory a run needs per rank, estimated before anything is allocated: `dtrun check` prints it
 * and `run` (like check) refuses, at the model's config key, a run that cannot fit in the host's
 * memory or its GPU's. What it counts, per rank with `count` local nodes (the busiest rank), in
 * bytes:
 *
 * - base: the process as it stands before loading anything (its libraries; MPI not yet started),
 *   read from /proc/self/statm when the program started;
 * - data: the data set as held on the host (images as stored, labels, the split's indices), and
 *   in backend memory the test samples evaluation decodes to floats, the nodes' batch buffers,
 *   and, off a host-memory backend, the resident training set;
 * - work: the model's workspaces, one training workspace per thread (at most one per node) and one
 *   evaluation workspace per thread (chunks of DT_EVAL_CHUNK samples; evaluation uses every
 *   thread, however few the nodes), as the CPU backend makes them (dt_workspace_bytes
 *   counts what dt_workspace_create allocates, without allocating);
 * - state: the largest problem's vectors of the parameters' size: θ, the runner's normalised
 *   copy and the task's gradient scratch per node, the algorithm's own (its declared state,
 *   dt_optimizer_state_size: per node, per out-edge, per rank), the runner's means, and the
 *   model's buffers.
 *
 * On a device backend (dt_backend.device_memory) the host holds base and data as loaded, the
 * device the workspaces, the state and the resident training set (the CUDA backend sizes its
 * groups of nodes from what is left, one node's at least); ranks on a host share its devices
 * (local rank mod their count) and its memory (dt_memory_share).
 *
 * The CPU backend counts what it allocates (dt_backend.mem_peak), and tests/e2e/memory.sh checks
 * each algorithm's state against it and the whole estimate against measured peaks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dt/graph.h"
#include "dt/io.h"
#include "dt/log.h"
#include "dt/nn.h"
#include "dt/optimizer.h"
#include "dt/problem.h"
#include "dt/run.h"

static double vec_bytes(size_t dim) { return 4.0 * (double)dt_slab_stride(dim); }

double dt_memory_state_bytes(const dt_optimizer_def *def, const void *opts, size_t dim, double nodes, double edges) {
  dt_state_size s = {.per_node = 3}; /* no algorithm (a broken config): θ's size three times over */
  if (def != NULL) s = dt_optimizer_state_size(def, opts, dim);
  return vec_bytes(dim) * (nodes * s.per_node + edges * s.per_edge + s.per_rank);
}

static double samples_bytes(const dt_samples *s) {
  return (double)s->count * ((s->u8 != NULL ? 1.0 : 4.0) * (double)s->dim + 1.0);
}

dt_status dt_memory_estimate(const dt_config *cfg, const dt_data *data, const dt_graph *g, const dt_model *m, int ranks, int threads,
                             dt_memory_backend be, dt_memory *out) {
  memset(out, 0, sizeof *out);
  const int n = g->n;
  ranks = ranks < 1 ? 1 : ranks > n ? n : ranks;
  const int count = (n + ranks - 1) / ranks;
  /* a device backend computes groups of nodes sized from its memory: one node's workspaces are
   * what it cannot do without (more memory buys larger groups, not a refusal) */
  if (!be.host) threads = 1;
  threads = threads < 1 ? 1 : threads;
  const int eval_threads = threads; /* evaluation uses every thread (chunks when nodes are fewer) */
  threads = threads > count ? count : threads;
  out->ranks = ranks, out->count = count, out->threads = threads;
  out->base = (double)dt_rss_at_start();
  /* data: on the host as stored, the split's indices */
  out->data = samples_bytes(&data->train) + samples_bytes(&data->test) + 4.0 * (double)data->train.count;
  const size_t P = dt_model_num_params(m), B = dt_model_num_buffers(m), in = dt_model_input_size(m);
  double worst = 0, work = 0, eval = 0, subset = 0, edges = 0;
  out->problem = 0;
  for (int k = 0; k < ranks; k++) { /* the out-edges of the rank that has the most */
    double e = 0;
    const int first = dt_placement_first(n, ranks, k), cnt = dt_placement_count(n, ranks, k);
    for (int i = first; i < first + cnt; i++) e += dt_graph_degree(g, i);
    edges = e > edges ? e : edges;
  }
  for (int p = 0; p < cfg->num_problems; p++) {
    const dt_problem_config *pc = &cfg->problems[p];
    const dt_optimizer_def *def = dt_optimizer_find(pc->alg_name);
    /* θ, the runner's normalised copy and the task's gradient scratch, and the algorithm's own */
    const double state = vec_bytes(P) * 3.0 * count + dt_memory_state_bytes(def, pc->alg_opts, P, count, edges) +
                         4.0 * (2.0 * P + 2.0 * P + P) /* the runner's means */ +
                         (B > 0 ? 2.0 * vec_bytes(B) * count + 12.0 * (double)B : 0.0);
    if (state > worst) worst = state, out->problem = p;
    const int batch = pc->full_batch ? DT_FULL_BATCH_CHUNK : pc->train_batch_size;
    const double w = threads * (double)dt_workspace_bytes(m, batch, 0) + 4.0 * (double)dt_slab_stride((size_t)batch * in) * count;
    work = w > work ? w : work;
    /* the test samples evaluations decode to floats: the whole set, or a subset beside it */
    const size_t sub = pc->evaluation.test_samples > 0 && (size_t)pc->evaluation.test_samples < data->test.count
                           ? (size_t)pc->evaluation.test_samples
                           : 0;
    const double decoded = 4.0 * (double)(sub > 0 ? sub : data->test.count) * ((double)data->test.dim + 1.0);
    if (sub > 0) subset = decoded > subset ? decoded : subset;
    else eval = decoded;
  }
  eval += subset;
  out->work = work + eval_threads * (double)dt_workspace_bytes(m, DT_EVAL_CHUNK, 1) + eval;
  out->state = worst;
  out->per_node = worst / count;
  if (be.host) {
    out->total = out->base + out->data + out->work + out->state;
  } else {
    /* a device backend: the process and the data as loaded on the host; the state, the
     * workspaces (a device backend sizes its groups of nodes to what is left: one node's at
     * least) and the resident training set on the device */
    out->total = out->base + out->data;
    out->device = out->work + out->state + samples_bytes(&data->train);
  }
  out->limit = (double)dt_host_memory_bytes();
  out->device_limit = be.host ? 0 : be.device_memory;
  out->host_ranks = out->device_ranks = 1;
  return DT_OK;
}

void dt_memory_share(dt_memory *mem, int host_ranks, int device_count) {
  host_ranks = host_ranks < 1 ? 1 : host_ranks;
  device_count = device_count < 1 ? 1 : device_count;
  mem->host_ranks = host_ranks;
  /* the ranks on a host share its devices, local rank mod their count (the CUDA backend's
   * choice); a rank that sees a single device through CUDA_VISIBLE_DEVICES was given its own by
   * its launcher (srun --gpus-per-task, a wrapper), and shares it with no one we know of */
  const char *visible = getenv("CUDA_VISIBLE_DEVICES");
  const int own = device_count == 1 && visible != NULL && visible[0] != '\0' && strchr(visible, ',') == NULL;
  mem->device_ranks = own ? 1 : (host_ranks + device_count - 1) / device_count;
  mem->limit /= host_ranks;
  mem->device_limit /= mem->device_ranks;
}

int dt_memory_over(const dt_memory *mem) {
  return (mem->limit > 0 && mem->total > mem->limit) || (mem->device_limit > 0 && mem->device > mem->device_limit);
}

const char *dt_memory_text(double bytes, char *buf, size_t size) {
  const double v = bytes >= 1e12 ? bytes / 1e12 : bytes >= 1e9 ? bytes / 1e9 : bytes / 1e6;
  snprintf(buf, size, v >= 100 ? "%.0f %s" : "%.3g %s", v, bytes >= 1e12 ? "TB" : bytes >= 1e9 ? "GB" : "MB");
  return buf;
}

void dt_memory_print(const dt_config *cfg, const dt_memory *mem, FILE *out) {
  char t[9][24];
  char of[48] = "";
  if (mem->limit > 0) snprintf(of, sizeof of, ", of %s on this host", dt_memory_text(mem->limit, t[1], 24));
  fprintf(out, "# memory: about %s per rank with %d node%s on it (%d rank%s)%s\n", dt_memory_text(mem->total, t[0], 24), mem->count,
          mem->count == 1 ? "" : "s", mem->ranks, mem->ranks == 1 ? "" : "s", of);
  if (mem->device > 0) { /* a device backend: the process and the data on the host, the rest on the device */
    fprintf(out, "#   process %s, data %s\n", dt_memory_text(mem->base, t[2], 24), dt_memory_text(mem->data, t[3], 24));
    char gpu[48] = " (no GPU here to hold it against)";
    if (mem->device_limit > 0) snprintf(gpu, sizeof gpu, " of its %s", dt_memory_text(mem->device_limit, t[8], 24));
    fprintf(out, "#   GPU: about %s%s: workspaces %s, the training set %s\n", dt_memory_text(mem->device, t[7], 24), gpu,
            dt_memory_text(mem->work, t[4], 24), dt_memory_text(mem->device - mem->work - mem->state, t[3], 24));
  } else
    fprintf(out, "#   process %s, data %s, workspaces %s (%d thread%s)\n", dt_memory_text(mem->base, t[2], 24), dt_memory_text(mem->data, t[3], 24),
            dt_memory_text(mem->work, t[4], 24), mem->threads, mem->threads == 1 ? "" : "s");
  fprintf(out, "#   state %s, %s per node (the largest: problem %s)%s\n", dt_memory_text(mem->state, t[5], 24),
          dt_memory_text(mem->per_node, t[6], 24), cfg->problems[mem->problem].problem_name, mem->device > 0 ? ", on the GPU" : "");
}

/* What one rank may take, in words: "this host's 25.3 GB", "the 12.6 GB share of each of the 2
 * ranks on this host". */
static const char *room_text(double limit, int ranks, const char *whose, const char *where, char *room, size_t size) {
  char t[24];
  if (ranks > 1) snprintf(room, size, "the %s share of each of the %d ranks on %s", dt_memory_text(limit, t, sizeof t), ranks, where);
  else snprintf(room, size, "%s %s", whose, dt_memory_text(limit, t, sizeof t));
  return room;
}

dt_status dt_memory_check(const dt_config *cfg, const dt_memory *mem) {
  char t[6][24], room[128];
  const int gpu = mem->device_limit > 0 && mem->device > mem->device_limit;
  if (!gpu && (mem->limit <= 0 || mem->total <= mem->limit)) return DT_OK;
  if (gpu) room_text(mem->device_limit, mem->device_ranks, "the GPU's", "its GPU", room, sizeof room);
  else room_text(mem->limit, mem->host_ranks, "this host's", "this host", room, sizeof room);
  if (!gpu && mem->device > 0) /* only the process and the data are on the host */
    return dt_config_positioned(
        cfg, DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.model",
                          "the run needs about %s of host memory per rank (the process %s, the data %s; the rest is on the GPU), "
                          "more than %s; use a host with more memory, or fewer ranks on it",
                          dt_memory_text(mem->total, t[0], 24), dt_memory_text(mem->base, t[1], 24), dt_memory_text(mem->data, t[2], 24),
                          room));
  /* the state is too large for the host (a host backend) or for the GPU: one message, its parts
   * named for where they are */
  return dt_config_positioned(
      cfg, DT_ERROR_KEY(DT_ERR_CONFIG, "experiment.model",
                        "the run needs about %s%s per rank (problem %s's state %s, %s per node, %d node%s on the busiest rank; "
                        "%s %s), more than %s; use a smaller model or batch%s, or %s",
                        dt_memory_text(gpu ? mem->device : mem->total, t[0], 24), gpu ? " of GPU memory" : "",
                        cfg->problems[mem->problem].problem_name, dt_memory_text(mem->state, t[1], 24),
                        dt_memory_text(mem->per_node, t[2], 24), mem->count, mem->count == 1 ? "" : "s",
                        gpu ? "workspaces and the training set" : "data and workspaces",
                        dt_memory_text(gpu ? mem->device - mem->state : mem->data + mem->work, t[3], 24), room,
                        mem->count > 1 ? ", fewer nodes per rank (more ranks)" : "", gpu ? "more GPUs" : "a host with more memory"));
}
