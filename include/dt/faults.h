/* Network faults (experiment.network: loss, loss_burst, link_up_rounds, link_down_rounds,
 * node_up_rounds, node_down_rounds): which nodes are online and which links work in a round, and
 * which of an exchange's messages arrive. The runner applies them (optimizers/run_ctx.c); this
 * module holds the draws.
 *
 * Every draw comes from its own stream (seed, DT_RNG_FAULTS, id) and every rank makes the same
 * ones, so the masks are the same for every rank count:
 *   node intervals   id = 2^60 + node: alternating online and offline lengths, in rounds;
 *   link intervals   id = 2^61 + undirected edge index: alternating up and down lengths;
 *   message loss     id = 2^62 + x, x the problem's exchange number: one uniform draw per message
 *                    sent, in directed-edge order (g->nbr_start order);
 *   burst start      id = 2^59: each directed link's Gilbert–Elliott state before its first message;
 *   async loss       id = 2^58 + m, m the problem's message number (asynchronous algorithms);
 *   centre loss      id = 2^57 + x, x the problem's centre exchange number: one draw per message
 *                    sent, in node order (a centre hosted with node 0: pushes, or replies; an
 *                    asynchronous algorithm's centre messages draw from the async stream);
 *   centre links     id = 2^56 + node: node's link to the centre, alternating up and down lengths
 *                    as a graph link's;
 *   centre bursts    id = 2^55: each centre link's two chains (push, reply) before its first message.
 * A length is geometric on {1, 2, ...} with the configured mean; every node and link starts a
 * problem online, with a fresh draw of its first interval. With loss_burst b > 1 each directed
 * link is a two-state chain (Gilbert, 1961): in the bad state every message is lost, in the good
 * state none; it leaves the bad state with probability 1/b per message (runs of mean length b)
 * and enters it with probability loss / ((1 − loss) b), so the long-run loss rate is `loss`. */
#ifndef DT_FAULTS_H
#define DT_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include "dt/graph.h"
#include "dt/network.h"
#include "dt/status.h"

typedef struct dt_faults dt_faults;

/* The faults of spec on graph g (borrowed; it must outlive the result). Not collective. */
DT_MUST_USE dt_status dt_faults_create(const dt_network_spec *spec, const dt_graph *g, uint64_t seed, dt_faults **out);
void dt_faults_free(dt_faults *f);
/* Whether nodes leave (node_up_rounds > 0). */
int dt_faults_churn(const dt_faults *f);
/* Round k's state: online[i] for the n nodes, up[e] for every directed edge (both directions of a
 * link alike). Rounds are asked in increasing order within a problem; an earlier round starts the
 * draws again from round 0, so a resumed problem gets the same states. */
void dt_faults_round(dt_faults *f, int k, uint8_t *online, uint8_t *up);
/* Gilbert–Elliott states before a problem's first message (all 0 with independent loss). */
void dt_faults_burst_start(const dt_faults *f, uint8_t *state);
/* Exchange number x: for each directed edge e with sent[e], whether its message is lost
 * (lost[e] = 1), moving e's chain in state (2·num_edges bytes) with a burst model. */
void dt_faults_loss(const dt_faults *f, uint64_t x, const uint8_t *sent, uint8_t *state, uint8_t *lost);
/* One message of an asynchronous algorithm (its number msg in the problem, on directed edge e):
 * whether it is lost, from the stream id = 2^58 + msg, moving e's chain in state with a burst
 * model. */
int dt_faults_lose_one(const dt_faults *f, uint64_t msg, int e, uint8_t *state);

/* The centre links (algorithms whose nodes talk to a centre hosted with node 0: centralized,
 * EASGD, Downpour): up[i] for each node's link to the centre in round k (asked in increasing
 * order, like dt_faults_round, on its own); the 2·n chains' states (pushes, then replies) before
 * the first message; and centre exchange number x: for each node with sent[i], whether its
 * message (a push or a reply, state the n chains of that direction) is lost. */
void dt_faults_centre_round(dt_faults *f, int k, uint8_t *up);
void dt_faults_centre_burst_start(const dt_faults *f, uint8_t *state);
void dt_faults_centre_loss(const dt_faults *f, uint64_t x, const uint8_t *sent, uint8_t *state, uint8_t *lost);

#endif
