/* netdelay: delay and loss on a network namespace's links, where the kernel has no netem.
 *
 * The test machines' kernel is built without sch_netem (and without any other delaying qdisc),
 * but with NFQUEUE. An iptables rule hands every packet a host receives on eth0 to this program
 * through libnetfilter_queue (ingress: packets held in the sender's own stack would count
 * against its TCP small-queues budget and throttle it, as netem on a sender does: 113 KB
 * took 115 ms instead of 15 at 5 ms); it drops a packet with probability LOSS (a seeded
 * xorshift stream, so a run's losses repeat) and gives every other packet back to the kernel
 * DELAY_MS after it arrived. The delay is constant, so packets leave in the order they came:
 * a FIFO of (packet id, due time) and one batch verdict for all that are due.
 *
 *   iptables -A INPUT -i eth0 -j NFQUEUE --queue-num 0
 *   netdelay --delay-ms 2 --loss 0.01 [--seed S] [--queue 0]
 *
 * Runs until SIGTERM or SIGINT, then lets every held packet go and prints what it did.
 * Overflow of the kernel queue lets packets through (fail-open) rather than losing them: the
 * only losses are the ones asked for. */
#include <arpa/inet.h> /* before the kernel headers, which then skip what libc defined */
#include <errno.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { QCAP = 1 << 20 }; /* held packets; the kernel queue is capped below this */

static struct {
  uint32_t id[QCAP];
  uint64_t due[QCAP];
  size_t head, len;
} fifo;

static uint64_t delay_ns, rng_state, seen, dropped, late;
static double loss;
static volatile sig_atomic_t stop;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double uniform01(void) { /* xorshift64*, top 53 bits */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *arg) {
  (void)msg, (void)arg;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
  if (!ph) return 0;
  uint32_t id = ntohl(ph->packet_id);
  seen++;
  if (loss > 0 && uniform01() < loss) {
    dropped++;
    return nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
  }
  if (fifo.len == QCAP) { /* cannot hold it: let it go now rather than lose it */
    late++;
    return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
  }
  size_t tail = (fifo.head + fifo.len) % QCAP;
  fifo.id[tail] = id;
  fifo.due[tail] = now_ns() + delay_ns;
  fifo.len++;
  return 0;
}

/* Accept every held packet due by `t` with one batch verdict (ids grow in arrival order; the
 * dropped ones already have their verdict). */
static void release(struct nfq_q_handle *qh, uint64_t t) {
  uint32_t last = 0;
  int any = 0;
  while (fifo.len && fifo.due[fifo.head] <= t) {
    last = fifo.id[fifo.head];
    any = 1;
    fifo.head = (fifo.head + 1) % QCAP;
    fifo.len--;
  }
  if (any && nfq_set_verdict_batch(qh, last, NF_ACCEPT) < 0)
    fprintf(stderr, "netdelay: verdict failed: %s\n", strerror(errno));
}

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int usage(void) {
  fprintf(stderr, "usage: netdelay --delay-ms MS [--loss P] [--seed S] [--queue N]\n");
  return 2;
}

int main(int argc, char **argv) {
  double delay_ms = -1;
  unsigned queue = 0;
  uint64_t seed = 1;
  for (int i = 1; i < argc; i += 2) { /* --option value pairs */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (!v) return usage();
    if (strcmp(a, "--delay-ms") == 0) delay_ms = strtod(v, &end);
    else if (strcmp(a, "--loss") == 0) loss = strtod(v, &end);
    else if (strcmp(a, "--seed") == 0) seed = strtoull(v, &end, 10);
    else if (strcmp(a, "--queue") == 0) queue = (unsigned)strtoul(v, &end, 10);
    else return usage();
    if (!end || *end || end == v) return usage();
  }
  if (delay_ms < 0 || delay_ms > 10000 || loss < 0 || loss >= 1) return usage();
  delay_ns = (uint64_t)(delay_ms * 1e6);
  rng_state = seed * 0x9E3779B97F4A7C15ull + 1;

  struct nfq_handle *h = nfq_open();
  if (!h) {
    fprintf(stderr, "netdelay: nfq_open: %s (root and CONFIG_NETFILTER_NETLINK_QUEUE needed)\n", strerror(errno));
    return 1;
  }
  nfq_unbind_pf(h, AF_INET);
  if (nfq_bind_pf(h, AF_INET) < 0) {
    fprintf(stderr, "netdelay: nfq_bind_pf: %s\n", strerror(errno));
    return 1;
  }
  struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
  if (!qh) {
    fprintf(stderr, "netdelay: queue %u: %s (is another netdelay on it?)\n", queue, strerror(errno));
    return 1;
  }
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0 || nfq_set_queue_maxlen(qh, QCAP / 2) < 0) {
    fprintf(stderr, "netdelay: queue setup: %s\n", strerror(errno));
    return 1;
  }
  nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN);
  int fd = nfq_fd(h), one = 1, rcvbuf = 8 << 20;
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);

  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  printf("netdelay: queue %u, delay %.3f ms, loss %.4f, seed %llu\n", queue, delay_ms, loss,
         (unsigned long long)seed);
  fflush(stdout);

  static char buf[1 << 16];
  while (!stop) {
    uint64_t t = now_ns();
    release(qh, t);
    struct timespec wait, *timeout = NULL; /* ns precision: poll's ms would add up to 1 ms */
    if (fifo.len) {
      uint64_t ns = fifo.due[fifo.head] > t ? fifo.due[fifo.head] - t : 0;
      wait = (struct timespec){.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
      timeout = &wait;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = ppoll(&p, 1, timeout, NULL);
    if (r < 0 && errno != EINTR) break;
    if (r > 0) {
      /* drain what is there without blocking, so a burst is timestamped as it arrives */
      for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0) break;
        nfq_handle_packet(h, buf, (int)n);
      }
    }
  }
  release(qh, UINT64_MAX);
  printf("netdelay: %llu packets, %llu dropped, %llu passed undelayed (queue full)\n",
         (unsigned long long)seen, (unsigned long long)dropped, (unsigned long long)late);
  nfq_destroy_queue(qh);
  nfq_close(h);
  return 0;
}
