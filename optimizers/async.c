/* The asynchronous engine (see async.h): the whole schedule on every rank, the vector work of
 * each rank's own nodes, payloads carried point to point. */
#include "async.h"
#include "run_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EV_STEP_END = 0, EV_ARRIVE = 1, EV_WAKE = 2 /* an offline node looks again (kind: the round) */ };

typedef struct event {
  double t;
  int node;  /* where it happens */
  int type;
  int from, kind, delivered; /* an arrival */
  uint64_t seq;              /* scheduling order: ties at equal (t, node) */
  uint64_t msg;              /* an arrival: the message's number */
} event;

/* A payload this rank expects from another rank, in the order that rank sends them. */
typedef struct expected {
  uint64_t msg;
  int kind, row;
} expected;

typedef struct fifo {
  expected *v;
  size_t head, n, cap;
} fifo;

/* A send made inside the current callback, carried when it returns. */
typedef struct pending {
  int to, kind, scratch;
} pending;

struct dt_async {
  dt_optimizer_run *run;
  dt_async_def def;
  void *ctx;
  const dt_graph *g;
  int P, me;
  double delta;      /* a round's simulated seconds */
  event *heap;
  size_t nheap, cap;
  uint64_t seq, msgs, events;
  uint64_t *steps;   /* [N] steps started */
  double now;
  int round, next_round, started, vectors;
  dt_slab inbox[DT_ASYNC_MAX_KINDS]; /* a row per local in-edge (its out-edge's position) */
  size_t maxlen;
  float **scratch;   /* backend buffers of maxlen floats for payloads to other ranks */
  int nscratch;
  float *host;       /* host copy of a payload crossing ranks */
  pending *pend;
  int num_pending, cap_pending;
  fifo *in;          /* [P] */
  dt_comm_request **reqs;
  size_t nreqs, capreqs;
  uint8_t *online, *up; /* [N], [2E]: the faults of round link_round */
  int link_round;
  int sent_to, sent_kind; /* the last send of the current callback (the trace's AEVT) */
  uint8_t *inflight[DT_ASYNC_MAX_KINDS]; /* [2E] a message of the kind is on the directed edge (every rank) */
  /* a centre (def.centre_len > 0): its events are at node N; a reply comes from N */
  dt_slab cpush, creply; /* a row per local node: its push, its reply (kept) */
  float *cin, *cout;     /* the centre's rank: a push from another rank, the reply (centre_len floats) */
  uint8_t *waiting;      /* [N] the node waits for the centre's reply (every rank) */
  uint8_t *cup;          /* [N] faults: each node's link to the centre in round link_round */
};

static int before(const event *a, const event *b) {
  if (a->t != b->t) return a->t < b->t;
  if (a->node != b->node) return a->node < b->node;
  return a->seq < b->seq;
}

static dt_status push(dt_async *a, event e) {
  if (a->nheap == a->cap) {
    const size_t cap = a->cap ? 2 * a->cap : 1024;
    event *grown = realloc(a->heap, sizeof *grown * cap);
    DT_CHECK(grown != NULL, DT_ERR_MEMORY, "out of memory for %zu events", cap);
    a->heap = grown;
    a->cap = cap;
  }
  e.seq = a->seq++;
  size_t i = a->nheap++;
  while (i > 0 && before(&e, &a->heap[(i - 1) / 2])) {
    a->heap[i] = a->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  a->heap[i] = e;
  return DT_OK;
}

static event pop(dt_async *a) {
  const event top = a->heap[0], last = a->heap[--a->nheap];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= a->nheap) break;
    if (c + 1 < a->nheap && before(&a->heap[c + 1], &a->heap[c])) c++;
    if (!before(&a->heap[c], &last)) break;
    a->heap[i] = a->heap[c];
    i = c;
  }
  if (a->nheap > 0) a->heap[i] = last;
  return top;
}

static int local(const dt_async *a, int node) { return node >= a->run->first && node < a->run->first + a->run->count; }
static int rank_of(const dt_async *a, int node) { return dt_placement_rank(a->g->n, a->P, node); }
/* The inbox row of the message from -> to (to local): to's out-edge to `from`. */
static int row_of(const dt_async *a, int to, int from) {
  return a->g->nbr_start[to] + dt_graph_nbr_index(a->g, to, from) - a->g->nbr_start[a->run->first];
}

/* A send's end where its failure cannot be reported any more (after another failure). */
static void finish_quietly(dt_comm_request *r) {
  const dt_status st = dt_comm_request_finish(r, 1, NULL);
  (void)st;
}

void dt_async_free(dt_async *a) {
  if (a == NULL) return;
  dt_backend *be = a->run->be;
  /* after a failure a receiver may never take what is left: its copies are left to the exit
   * rather than waited for (every round's end waits for all) */
  for (size_t r = 0; r < a->nreqs; r++) {
    int done;
    const dt_status st = dt_comm_request_finish(a->reqs[r], 0, &done);
    (void)st;
  }
  for (int k = 0; k < DT_ASYNC_MAX_KINDS; k++) dt_free(a->inflight[k]);
  for (int k = 0; k < DT_ASYNC_MAX_KINDS; k++) dt_slab_free(be, &a->inbox[k]);
  for (int s = 0; s < a->nscratch; s++) dt_be_free(be, a->scratch[s]);
  for (int p = 0; a->in != NULL && p < a->P; p++) dt_free(a->in[p].v);
  dt_free(a->scratch);
  dt_free(a->heap);
  dt_free(a->steps);
  dt_free(a->host);
  dt_free(a->pend);
  dt_free(a->in);
  dt_free(a->reqs);
  dt_free(a->online);
  dt_free(a->up);
  dt_slab_free(be, &a->cpush);
  dt_slab_free(be, &a->creply);
  dt_be_free(be, a->cin);
  dt_be_free(be, a->cout);
  dt_free(a->waiting);
  dt_free(a->cup);
  dt_free(a);
}

dt_status dt_async_create(dt_optimizer_run *run, const dt_async_def *def, void *ctx, dt_async **out) {
  dt_status st = DT_OK;
  dt_async *a = NULL;
  const dt_graph *g = run->graph;
  *out = NULL;
  DT_CHECK(run->net != NULL, DT_ERR_INTERNAL, "an asynchronous algorithm without the simulated clock");
  DT_CHECK(def->kinds >= (def->centre_len > 0 ? 0 : 1) && def->kinds <= DT_ASYNC_MAX_KINDS, DT_ERR_INTERNAL, "%d message kinds",
           def->kinds);
  DT_ALLOC_GOTO(a, 1, "asynchronous engine");
  a->run = run;
  run->unparked = 1; /* churn is handled event by event here (begin, handle): nothing to put back */
  a->def = *def;
  a->ctx = ctx;
  a->g = g;
  a->P = dt_comm_size(run->comm);
  a->me = dt_comm_rank(run->comm);
  a->vectors = 1;
  a->link_round = -1;
  a->delta = dt_network_nominal_seconds(run->net, run->pc->full_batch ? dt_task_mean_node_samples(run->task) : run->pc->train_batch_size);
  DT_CHECK_GOTO(a->delta > 0 && isfinite(a->delta), DT_ERR_INTERNAL, "an asynchronous round of %g s", a->delta);
  DT_ALLOC_GOTO(a->steps, (size_t)g->n, "asynchronous engine");
  DT_ALLOC_GOTO(a->in, (size_t)a->P, "asynchronous engine");
  DT_ALLOC_GOTO(a->online, (size_t)g->n, "asynchronous engine");
  DT_ALLOC_GOTO(a->up, 2 * (size_t)g->num_edges + 1, "asynchronous engine");
  const int rows = dt_run_local_edges(run);
  for (int k = 0; k < def->kinds; k++) {
    char name[32];
    if (def->len[k] > a->maxlen) a->maxlen = def->len[k];
    DT_TRY_GOTO(dt_slab_create(run->be, rows, def->len[k], &a->inbox[k]));
    DT_ALLOC_GOTO(a->inflight[k], 2 * (size_t)g->num_edges + 1, "asynchronous engine");
    snprintf(name, sizeof name, "async_inbox%d", k);
    DT_TRY_GOTO(dt_run_keep_edge_slab(run, name, &a->inbox[k]));
  }
  if (def->centre_len > 0) {
    DT_CHECK_GOTO(def->centre != NULL && def->centre_reply != NULL && def->kinds == 0, DT_ERR_INTERNAL,
                  "a centre without its callbacks, or beside graph messages (their payloads would cross on one tag)");
    if (def->centre_len > a->maxlen) a->maxlen = def->centre_len;
    DT_ALLOC_GOTO(a->waiting, (size_t)g->n, "asynchronous engine");
    if (run->faults != NULL) DT_ALLOC_GOTO(a->cup, (size_t)g->n, "asynchronous engine");
    DT_TRY_GOTO(dt_slab_create(run->be, run->count, def->centre_len, &a->cpush));
    DT_TRY_GOTO(dt_slab_create(run->be, run->count, def->centre_len, &a->creply));
    DT_TRY_GOTO(dt_run_keep_slab(run, "async_centre_push", &a->cpush));
    DT_TRY_GOTO(dt_run_keep_slab(run, "async_centre_reply", &a->creply));
    if (a->me == dt_placement_rank(g->n, a->P, 0)) {
      DT_TRY_GOTO(dt_be_alloc(run->be, sizeof(float) * def->centre_len, (void **)&a->cin));
      DT_TRY_GOTO(dt_be_alloc(run->be, sizeof(float) * def->centre_len, (void **)&a->cout));
    }
  }
  DT_ALLOC_GOTO(a->host, a->maxlen + 1, "asynchronous engine");
  *out = a;
  a = NULL;
cleanup:
  dt_async_free(a);
  return st;
}

int dt_async_always(const void *opts) {
  (void)opts;
  return 1;
}
int dt_async_now_round(const dt_async *a) { return a->round; }
int dt_async_local(const dt_async *a, int node) { return a->vectors && local(a, node) ? node - a->run->first : -1; }
int dt_async_in_flight(const dt_async *a, int from, int to, int kind) {
  return a->inflight[kind][a->g->nbr_start[from] + dt_graph_nbr_index(a->g, from, to)];
}
double dt_async_now(const dt_async *a) { return a->now; }
uint64_t dt_async_events(const dt_async *a) { return a->events; }

dt_status dt_async_gradient(dt_async *a, int l, const dt_slab *x, dt_slab *grad) {
  dt_optimizer_run *run = a->run;
  const int node = run->first + l;
  const uint64_t seen = dt_task_samples_seen(run->task, node);
  DT_TRY(dt_run_gradient_node(run, x, grad, l));
  /* the schedule's durations assumed this many samples (dt_task_step_samples) */
  const uint64_t took = dt_task_samples_seen(run->task, node) - seen, want = dt_task_step_samples(run->task, node, a->steps[node] - 1);
  DT_CHECK(took == want, DT_ERR_INTERNAL, "node %d's step %llu took %llu samples, the schedule %llu", node,
           (unsigned long long)(a->steps[node] - 1), (unsigned long long)took, (unsigned long long)want);
  return DT_OK;
}

/* The faults of round r (at least) drawn into a->online and a->up; the round they are of. Never
 * back: events come in time order, and a time on a boundary may round either way. */
static int fault_round(dt_async *a, int r) {
  if (r > a->link_round) {
    dt_faults_round(a->run->faults, r, a->online, a->up);
    if (a->cup != NULL) dt_faults_centre_round(a->run->faults, r, a->cup);
    a->link_round = r;
  }
  return a->link_round;
}

/* Whether node is online in the round being processed (experiment.network's churn:
 * node_up_rounds; the runner's round, in which an offline node's state is kept as it was). */
static int online_now(dt_async *a, int node) {
  if (!dt_faults_churn(a->run->faults)) return 1;
  (void)fault_round(a, a->round);
  return a->online[node];
}

/* Node's next step starts now: its end is scheduled, and a local node's vector work begins. */
static dt_status start_step(dt_async *a, int node) {
  dt_optimizer_run *run = a->run;
  const uint64_t n = a->steps[node]++;
  const double samples = (double)dt_task_step_samples(run->task, node, n);
  DT_TRY(push(a, (event){.t = a->now + dt_network_step_seconds(run->net, node, n, samples), .node = node, .type = EV_STEP_END}));
  if (a->vectors && local(a, node)) {
    dt_timer_start(&run->t_compute);
    const dt_status st = a->def.step_start(a->ctx, a, node - run->first);
    dt_timer_stop(&run->t_compute);
    DT_TRY(st);
  }
  return DT_OK;
}

/* Node's next step starts now when it is online; an offline node looks again at the start of
 * each next round until it is back (churn: it computes nothing while away). */
static dt_status begin(dt_async *a, int node, int round) {
  if (!dt_faults_churn(a->run->faults)) return start_step(a, node);
  const int r = fault_round(a, round > a->round ? round : a->round);
  if (a->online[node]) return start_step(a, node);
  return push(a, (event){.t = (r + 1) * a->delta, .node = node, .type = EV_WAKE, .kind = r + 1});
}

dt_status dt_async_send(dt_async *a, int node, int to, int kind, float **payload) {
  dt_optimizer_run *run = a->run;
  const dt_graph *g = a->g;
  *payload = NULL;
  const int k = dt_graph_nbr_index(g, node, to);
  DT_CHECK(k >= 0 && kind >= 0 && kind < a->def.kinds, DT_ERR_INTERNAL, "node %d sends kind %d to %d, not a neighbour", node, kind, to);
  const int e = g->nbr_start[node] + k;
  DT_CHECK(!a->inflight[kind][e], DT_ERR_INTERNAL, "node %d sends a second message of kind %d to %d before the first arrived", node,
           kind, to);
  a->inflight[kind][e] = 1;
  const double bytes = sizeof(float) * (double)a->def.len[kind];
  const uint64_t msg = a->msgs++;
  int lost = 0;
  a->sent_to = to, a->sent_kind = kind;
  if (run->faults != NULL) {
    (void)fault_round(a, (int)floor(a->now / a->delta)); /* the round the send falls in */
    lost = !a->up[e];
    lost |= dt_faults_lose_one(run->faults, msg, e, run->burst); /* drawn either way: the stream's use is fixed */
  }
  DT_TRY(push(a, (event){.t = a->now + dt_network_message_seconds(run->net, node, to, bytes), .node = to, .type = EV_ARRIVE,
                         .from = node, .kind = kind, .delivered = !lost, .msg = msg}));
  if (!a->vectors) return DT_OK;
  if (local(a, node)) {
    const int l = node - run->first;
    run->node_bytes[l] += (uint64_t)bytes;
    if (run->msgs != NULL) run->msgs[3 * (size_t)l] += 1, run->msgs[3 * (size_t)l + 1] += (uint64_t)lost;
    if (lost) return DT_OK;
    if (local(a, to)) {
      *payload = dt_slab_node(&a->inbox[kind], row_of(a, to, node));
      return DT_OK;
    }
    if (a->num_pending == a->cap_pending) {
      const int cap = a->cap_pending ? 2 * a->cap_pending : 8;
      pending *grown = realloc(a->pend, sizeof *grown * (size_t)cap);
      DT_CHECK(grown != NULL, DT_ERR_MEMORY, "out of memory for pending sends");
      a->pend = grown, a->cap_pending = cap;
    }
    if (a->num_pending == a->nscratch) {
      float **grown = realloc(a->scratch, sizeof *grown * (size_t)(a->nscratch + 1));
      DT_CHECK(grown != NULL, DT_ERR_MEMORY, "out of memory for payloads");
      a->scratch = grown;
      DT_TRY(dt_be_alloc(run->be, sizeof(float) * a->maxlen, (void **)&a->scratch[a->nscratch]));
      a->nscratch++;
    }
    a->pend[a->num_pending] = (pending){.to = to, .kind = kind, .scratch = a->num_pending};
    *payload = a->scratch[a->num_pending++];
  } else if (local(a, to) && !lost) { /* another rank's node sends one of ours a payload: expect it */
    fifo *q = &a->in[rank_of(a, node)];
    if (q->n == q->cap) {
      if (q->head > 0) memmove(q->v, q->v + q->head, sizeof *q->v * (q->n - q->head)), q->n -= q->head, q->head = 0;
      if (q->n == q->cap) {
        const size_t cap = q->cap ? 2 * q->cap : 64;
        expected *grown = realloc(q->v, sizeof *grown * cap);
        DT_CHECK(grown != NULL, DT_ERR_MEMORY, "out of memory for expected payloads");
        q->v = grown, q->cap = cap;
      }
    }
    q->v[q->n++] = (expected){.msg = msg, .kind = kind, .row = row_of(a, to, node)};
  }
  return DT_OK;
}

/* ---- the centre ------------------------------------------------------------------------------ */

/* Seconds for centre_len floats between node and the centre (with node 0: none). */
static double centre_seconds(const dt_async *a, int node, int to_centre) {
  const double bytes = sizeof(float) * (double)a->def.centre_len;
  if (node == 0) return 0;
  return to_centre ? dt_network_message_seconds(a->run->net, node, 0, bytes) : dt_network_message_seconds(a->run->net, 0, node, bytes);
}

/* Whether a message between node and the centre (the reply: reply = 1), number msg, sent now, is
 * lost: its link to the centre down, or the loss draw (the chain of that direction). */
static int centre_lost(dt_async *a, int node, int reply, uint64_t msg) {
  dt_optimizer_run *run = a->run;
  if (run->faults == NULL) return 0;
  (void)fault_round(a, (int)floor(a->now / a->delta));
  int lost = !a->cup[node];
  lost |= dt_faults_lose_one(run->faults, msg, node + (reply ? a->g->n : 0), run->centre_burst); /* drawn either way */
  return lost;
}

dt_status dt_async_push(dt_async *a, int node, float **payload) {
  dt_optimizer_run *run = a->run;
  *payload = NULL;
  DT_CHECK(a->def.centre_len > 0 && !a->waiting[node], DT_ERR_INTERNAL, "node %d pushes to %s", node,
           a->def.centre_len > 0 ? "the centre while it waits for its reply" : "a centre the algorithm does not have");
  a->waiting[node] = 1;
  const uint64_t msg = a->msgs++;
  const int lost = centre_lost(a, node, 0, msg);
  DT_TRY(push(a, (event){.t = a->now + centre_seconds(a, node, 1), .node = a->g->n, .type = EV_ARRIVE, .from = node,
                         .delivered = !lost, .msg = msg}));
  if (!a->vectors || !local(a, node)) return DT_OK;
  const int l = node - run->first;
  run->node_bytes[l] += sizeof(float) * (uint64_t)a->def.centre_len;
  if (run->msgs != NULL) run->msgs[3 * (size_t)l] += 1, run->msgs[3 * (size_t)l + 1] += (uint64_t)lost;
  *payload = dt_slab_node(&a->cpush, l);
  return DT_OK;
}

/* A push reaches the centre (or would have: lost). The centre's rank applies it and answers; the
 * pushing node's rank (when another) sends the push and receives the reply, both now; then the
 * reply leaves. A lost push: its node learns of it now. */
static dt_status centre_event(dt_async *a, const event *ev) {
  dt_optimizer_run *run = a->run;
  const int from = ev->from, home = rank_of(a, 0), there = rank_of(a, from);
  const size_t len = a->def.centre_len, bytes = sizeof(float) * len;
  const int l = a->vectors && local(a, from) ? from - run->first : -1;
  if (!ev->delivered) {
    a->waiting[from] = 0;
    dt_timer_start(&run->t_compute);
    const dt_status st = a->def.centre_reply(a->ctx, a, from, l, NULL, 0);
    dt_timer_stop(&run->t_compute);
    DT_TRY(st);
    return begin(a, from, 0);
  }
  if (a->vectors) {
    if (run->centre_up != NULL) run->centre_msgs[2] += 1;
    dt_comm_request *req = NULL;
    if (a->me == home) {
      const float *pushed = l >= 0 ? dt_slab_node(&a->cpush, l) : a->cin;
      if (l < 0) { /* from another rank */
        dt_timer_start(&run->t_comm);
        const dt_status st = dt_comm_recv_bytes(run->comm, there, a->host, bytes);
        dt_timer_stop(&run->t_comm);
        DT_TRY(st);
        DT_TRY(dt_be_upload(run->be, a->cin, a->host, bytes));
      }
      dt_timer_start(&run->t_compute);
      const dt_status st = a->def.centre(a->ctx, a, from, pushed, l >= 0 ? dt_slab_node(&a->creply, l) : a->cout);
      dt_timer_stop(&run->t_compute);
      DT_TRY(st);
      if (l < 0) {
        DT_TRY(dt_be_download(run->be, a->host, a->cout, bytes));
        dt_timer_start(&run->t_comm);
        const dt_status sent = dt_comm_send_bytes(run->comm, there, a->host, bytes, &req);
        dt_timer_stop(&run->t_comm);
        DT_TRY(sent);
        DT_TRY(dt_comm_request_finish(req, 1, NULL)); /* the host copy is reused at once */
      }
    } else if (l >= 0) { /* our node's push to the centre's rank, and its reply back */
      DT_TRY(dt_be_download(run->be, a->host, dt_slab_node(&a->cpush, l), bytes));
      dt_timer_start(&run->t_comm);
      dt_status st = dt_comm_send_bytes(run->comm, home, a->host, bytes, &req);
      if (st == DT_OK) st = dt_comm_request_finish(req, 1, NULL);
      if (st == DT_OK) st = dt_comm_recv_bytes(run->comm, home, a->host, bytes);
      dt_timer_stop(&run->t_comm);
      DT_TRY(st);
      DT_TRY(dt_be_upload(run->be, dt_slab_node(&a->creply, l), a->host, bytes));
    }
  }
  const uint64_t msg = a->msgs++;
  const int lost = centre_lost(a, from, 1, msg);
  if (a->vectors && run->centre_up != NULL) run->centre_msgs[0] += 1, run->centre_msgs[1] += (uint64_t)lost, run->centre_msgs[3] += bytes;
  if (a->vectors && run->centre_up == NULL && local(a, 0)) run->node_bytes[0 - run->first] += bytes; /* node 0 hosts the centre */
  return push(a, (event){.t = a->now + centre_seconds(a, from, 0), .node = from, .type = EV_ARRIVE, .from = a->g->n,
                         .delivered = !lost, .msg = msg});
}

/* The centre's reply reaches node (or would have). */
static dt_status centre_answer(dt_async *a, const event *ev, int l) {
  dt_optimizer_run *run = a->run;
  const int node = ev->node;
  const int delivered = ev->delivered && online_now(a, node); /* an offline node misses it */
  if (a->vectors && run->centre_up != NULL && ev->delivered && !delivered) run->centre_msgs[1] += 1;
  if (l >= 0 && delivered && run->msgs != NULL) run->msgs[3 * (size_t)l + 2] += 1;
  a->waiting[node] = 0;
  dt_timer_start(&run->t_compute);
  const dt_status st = a->def.centre_reply(a->ctx, a, node, l, l >= 0 && delivered ? dt_slab_node(&a->creply, l) : NULL, delivered);
  dt_timer_stop(&run->t_compute);
  DT_TRY(st);
  return begin(a, node, 0);
}

/* The sends of the callback that just returned, to other ranks. */
static dt_status flush(dt_async *a) {
  dt_optimizer_run *run = a->run;
  for (int p = 0; p < a->num_pending; p++) {
    const pending *s = &a->pend[p];
    const size_t len = a->def.len[s->kind];
    dt_comm_request *req;
    DT_TRY(dt_be_download(run->be, a->host, a->scratch[s->scratch], sizeof(float) * len));
    dt_timer_start(&run->t_comm);
    const dt_status st = dt_comm_send_bytes(run->comm, rank_of(a, s->to), a->host, sizeof(float) * len, &req);
    dt_timer_stop(&run->t_comm);
    DT_TRY(st);
    if (a->nreqs == a->capreqs) {
      const size_t cap = a->capreqs ? 2 * a->capreqs : 64;
      dt_comm_request **grown = realloc(a->reqs, sizeof *grown * cap);
      if (grown == NULL) {
        finish_quietly(req);
        return DT_ERROR(DT_ERR_MEMORY, "out of memory for sends");
      }
      a->reqs = grown, a->capreqs = cap;
    }
    a->reqs[a->nreqs++] = req;
  }
  a->num_pending = 0;
  return DT_OK;
}

/* Receives, in order, the payloads rank src sent this rank up to message msg (all: UINT64_MAX);
 * those received before (at a round's end) are in their inboxes already. Message numbers grow
 * in the order a rank sends. */
static dt_status receive(dt_async *a, int src, uint64_t msg) {
  dt_optimizer_run *run = a->run;
  fifo *q = &a->in[src];
  while (q->head < q->n && q->v[q->head].msg <= msg) {
    const expected x = q->v[q->head++];
    const size_t len = a->def.len[x.kind];
    dt_timer_start(&run->t_comm);
    const dt_status st = dt_comm_recv_bytes(run->comm, src, a->host, sizeof(float) * len);
    dt_timer_stop(&run->t_comm);
    DT_TRY(st);
    DT_TRY(dt_be_upload(run->be, dt_slab_node(&a->inbox[x.kind], x.row), a->host, sizeof(float) * len));
  }
  if (q->head == q->n) q->head = q->n = 0;
  return DT_OK;
}

/* Sends that are done give their copies back (every 64 sends, and at a round's end: all). */
static dt_status reap(dt_async *a, int wait) {
  size_t kept = 0, r = 0;
  dt_status st = DT_OK;
  for (; r < a->nreqs && st == DT_OK; r++) {
    int done = 0;
    st = dt_comm_request_finish(a->reqs[r], wait, &done);
    if (st != DT_OK || !done) a->reqs[kept++] = a->reqs[r]; /* failed: not freed, still listed */
  }
  for (; r < a->nreqs; r++) a->reqs[kept++] = a->reqs[r];
  a->nreqs = kept;
  return st;
}

static dt_status handle(dt_async *a, const event *ev) {
  dt_optimizer_run *run = a->run;
  const int l = a->vectors && local(a, ev->node) ? ev->node - run->first : -1;
  a->now = ev->t;
  a->events++;
  if (a->vectors) run->events++;
  if (ev->type == EV_WAKE) return begin(a, ev->node, ev->kind);
  if (ev->type == EV_ARRIVE && ev->node == a->g->n) return centre_event(a, ev);
  if (ev->type == EV_ARRIVE && ev->from == a->g->n) return centre_answer(a, ev, l);
  if (ev->type == EV_STEP_END && !online_now(a, ev->node)) return begin(a, ev->node, 0); /* offline as it ends: nothing of it */
  if (ev->type == EV_STEP_END) {
    a->sent_to = -1, a->sent_kind = 0;
    dt_timer_start(&run->t_compute);
    const dt_status st = a->def.step_end(a->ctx, a, ev->node, l);
    dt_timer_stop(&run->t_compute);
    DT_TRY(st);
    DT_TRY(flush(a));
    if (l >= 0 && run->trace != NULL) { /* --dump-trace: the event's global number, and whom the node sent to */
      const int32_t v[5] = {(int32_t)(a->events - 1), EV_STEP_END, a->sent_to, a->sent_kind, 1};
      DT_TRY(dt_run_trace_i32(run, l, "AEVT", v, 5));
    }
    return a->waiting != NULL && a->waiting[ev->node] ? DT_OK : begin(a, ev->node, 0); /* a push waits for its reply */
  }
  if (l >= 0 && run->trace != NULL) {
    const int32_t v[5] = {(int32_t)(a->events - 1), EV_ARRIVE, ev->from, ev->kind, ev->delivered};
    DT_TRY(dt_run_trace_i32(run, l, "AEVT", v, 5));
  }
  a->inflight[ev->kind][a->g->nbr_start[ev->from] + dt_graph_nbr_index(a->g, ev->from, ev->node)] = 0;
  const float *payload = NULL;
  const int delivered = ev->delivered && online_now(a, ev->node); /* an offline receiver misses it */
  if (ev->delivered && !delivered && a->vectors && local(a, ev->from) && run->msgs != NULL)
    run->msgs[3 * (size_t)(ev->from - run->first) + 1] += 1; /* the sender's: sent, not arrived */
  if (l >= 0 && ev->delivered && !local(a, ev->from)) DT_TRY(receive(a, rank_of(a, ev->from), ev->msg)); /* its payload, in order */
  if (l >= 0 && delivered) {
    payload = dt_slab_node(&a->inbox[ev->kind], row_of(a, ev->node, ev->from));
    if (run->msgs != NULL) run->msgs[3 * (size_t)l + 2] += 1;
  }
  DT_TRY(a->def.arrive(a->ctx, a, ev->node, l, ev->from, ev->kind, payload, delivered));
  DT_TRY(flush(a));
  return a->nreqs >= 64 ? reap(a, 0) : DT_OK;
}

/* Every event before time `until`. */
static dt_status process(dt_async *a, double until) {
  if (!a->started) {
    a->started = 1;
    a->now = 0;
    for (int i = 0; i < a->g->n; i++) DT_TRY(begin(a, i, 0));
  }
  while (a->nheap > 0 && a->heap[0].t < until) {
    const event ev = pop(a);
    DT_TRY(handle(a, &ev));
  }
  return DT_OK;
}

dt_status dt_async_round(dt_async *a, int k) {
  dt_optimizer_run *run = a->run;
  if (k != a->next_round) { /* a resumed problem: the schedule up to round k again, without vector work */
    DT_CHECK(a->next_round == 0 && !a->started && k > 0, DT_ERR_INTERNAL, "asynchronous round %d after %d", k, a->next_round - 1);
    if (run->faults != NULL) dt_faults_burst_start(run->faults, run->burst);
    if (run->centre_up != NULL) dt_faults_centre_burst_start(run->faults, run->centre_burst);
    a->vectors = 0;
    dt_status st = DT_OK;
    for (int j = 0; j < k && st == DT_OK; j++) { /* round by round, as they ran (churn asks the round) */
      a->round = j;
      st = process(a, (j + 1) * a->delta);
    }
    a->vectors = 1;
    DT_TRY(st);
  }
  a->round = k;
  DT_TRY(process(a, (k + 1) * a->delta));
  /* a boundary: every payload sent to this rank's nodes is in their inboxes (what a checkpoint keeps) */
  for (int src = 0; src < a->P; src++)
    if (src != a->me) DT_TRY(receive(a, src, UINT64_MAX));
  DT_TRY(reap(a, 1));
  for (int i = 0; run->sim_clock != NULL && i < a->g->n; i++) run->sim_clock[i] = (k + 1) * a->delta;
  a->next_round = k + 1;
  return DT_OK;
}
