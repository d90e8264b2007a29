/* The asynchronous engine: algorithms whose nodes act when their own step ends and when a
 * message reaches them, on the simulated clock (experiment.network), not in lockstep rounds.
 *
 * Events happen in (time, node, sequence) order: a node's step ends (its duration: the step's
 * samples over the node's speed, dt/network.h), or a message arrives (it left at its sender's
 * event time and takes latency + bytes / bandwidth). What happens when — which node steps, who
 * sends what to whom, which message is lost — depends on the config and the seed alone, never
 * on the model's values, so every rank simulates the whole schedule (a heap of small records,
 * O(log N) per event) and does the vector work of its own nodes only, each node's in its event
 * order. A payload crossing ranks is sent when it is made and received when it is needed (or at
 * the round's end); since a message arrives after it was sent, no rank ever waits on one that
 * has not been sent yet. The results are therefore the same bytes at every rank count, without a
 * global synchronisation per event.
 *
 * Round k of an asynchronous algorithm is the simulated time [kΔ, (k+1)Δ), Δ the time a node of
 * the configured speed takes for one minibatch (dt_network_nominal_seconds): the runner
 * evaluates, checkpoints and stops at round boundaries, where every node's state is the one
 * after all events before that time. Payloads in flight at a boundary wait in the receiver's
 * inbox (one slot per directed edge and kind: an algorithm has at most one message of a kind in
 * flight on an edge), which checkpoints keep; the schedule itself is replayed from time 0 on
 * resume, without vector work.
 *
 * Faults: loss and link failures (a failed link loses what it would carry) apply per message at
 * its send; node churn (the round an event falls in says who is online) at each event: a node
 * offline when its step ends loses that step (no update, nothing sent) and starts the next one
 * at the first round it is back in, and a message reaching an offline node is lost. The plug-in
 * learns of a lost message at the time it would have arrived (an arrive call with delivered = 0,
 * on every rank), and may give the sender back what it sent even while the sender is away
 * (push-sum's returned pushes). Who is online is asked of the round the engine has drawn the
 * faults for: the round being processed, or the next one once a send on the boundary drew it.
 *
 * A centre (centre_len > 0: asynchronous Downpour and EASGD), hosted with node 0 on its rank:
 * a node pushes to it (dt_async_push) and then waits, computing nothing, for the centre's reply.
 * The centre answers each push when it arrives, in event order (the staleness the clock
 * produces: the other pushes it applied since this node's last reply), and the reply reaches the
 * node a message time later (none between node 0 and the centre); then the node's next step
 * starts. Since the pushing node is idle until its reply, its push is read when it reaches the
 * centre: the node's rank and the centre's exchange push and reply then, both processing that
 * event (a node on the centre's rank: no transfer). Push and reply wait in per-node rows that
 * checkpoints keep. Faults act on both as on the node's link to the centre (dt/faults.h: loss,
 * failures; the centre never leaves); a lost push is known to its node when it would have
 * arrived (centre_reply with delivered = 0), as is a lost reply. An algorithm uses the centre or
 * the graph's messages, not both. */
#ifndef DT_ASYNC_H
#define DT_ASYNC_H

#include "dt/optimizer.h"

typedef struct dt_async dt_async;

enum { DT_ASYNC_MAX_KINDS = 4 };

typedef struct dt_async_def {
  int kinds;                      /* message kinds, each with its payload of len[kind] floats */
  size_t len[DT_ASYNC_MAX_KINDS];
  /* Node `node` starts a step (l: its local index). The vector work only (local nodes, not in a
   * replay): typically the gradient at the node's model (dt_async_gradient). */
  dt_status (*step_start)(void *ctx, dt_async *a, int l);
  /* Node `node`'s step has ended; l its local index, or -1 where the rank does no vector work
   * for it (another rank's node, a replay): the scalar decisions (whom to send what) are made on
   * every rank alike, the vector work only where l >= 0. */
  dt_status (*step_end)(void *ctx, dt_async *a, int node, int l);
  /* A message of `kind` from `from` reaches `node` (delivered = 0: it was lost; the payload is
   * NULL then and where l < 0). */
  dt_status (*arrive)(void *ctx, dt_async *a, int node, int l, int from, int kind, const float *payload, int delivered);
  /* A centre: pushes and replies of centre_len floats (0: none). centre: on the centre's rank, in
   * event order, with vector work only: the push from `from` is applied, the reply written.
   * centre_reply: node's reply arrived (delivered = 0: its push or the reply was lost; reply is
   * NULL then and where l < 0); the node's next step starts when it returns. */
  size_t centre_len;
  dt_status (*centre)(void *ctx, dt_async *a, int from, const float *push, float *reply);
  dt_status (*centre_reply)(void *ctx, dt_async *a, int node, int l, const float *reply, int delivered);
} dt_async_def;

/* The engine for run (its network is needed: refused before anything runs otherwise), calling
 * def's functions with ctx. Registers the inboxes for checkpoints. Collective. */
DT_MUST_USE dt_status dt_async_create(dt_optimizer_run *run, const dt_async_def *def, void *ctx, dt_async **out);
void dt_async_free(dt_async *a);
/* Runs round k's events (replaying the earlier ones first after a resume). Collective. */
DT_MUST_USE dt_status dt_async_round(dt_async *a, int k);
/* Inside step_end or arrive: node sends a message of kind to its neighbour `to`. Returns where
 * to write the payload (len[kind] floats of backend memory) when the sender is local and vector
 * work is on, else NULL. The engine carries it when the callback returns. */
DT_MUST_USE dt_status dt_async_send(dt_async *a, int node, int to, int kind, float **payload);
/* Inside step_end: node pushes to the centre and waits for its reply. Returns where to write the
 * push (centre_len floats of backend memory) where the node is local and vector work is on, else
 * NULL. */
DT_MUST_USE dt_status dt_async_push(dt_async *a, int node, float **payload);
/* Whether a message of kind from `from` to its neighbour `to` is on its way (sent, not yet
 * arrived or known lost): at most one may be, per kind and directed edge. */
int dt_async_in_flight(const dt_async *a, int from, int to, int kind);
/* Node's local index where this rank does its vector work now (its own node, not in a replay),
 * else -1: for a callback that acts on another node than its own (a sender told of a loss). */
int dt_async_local(const dt_async *a, int node);
/* The round being run, and the current event's time. */
int dt_async_now_round(const dt_async *a);
double dt_async_now(const dt_async *a);
/* Local node l's gradient at its row of x into its row of grad (dt_run_gradients for one node). */
DT_MUST_USE dt_status dt_async_gradient(dt_async *a, int l, const dt_slab *x, dt_slab *grad);
/* dt_optimizer_def.asynchronous of an algorithm asynchronous with every option (AD-PSGD). */
int dt_async_always(const void *opts);
/* Events processed so far on this rank (every node's, vector work or not), for benchmarks. */
uint64_t dt_async_events(const dt_async *a);

#endif
