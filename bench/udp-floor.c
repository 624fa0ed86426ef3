// udp-floor: the least a closed-loop DNS-over-UDP generator can do per answer with the kernel's
// sockets, as a reference beside dnsperf and `ldplayer replay --fast` (bench/replay.sh).
//
// It keeps a fixed number of queries in flight on one connected UDP socket, sends them in
// batches with sendmmsg(2) and reads answers in batches with recvmmsg(2), waiting in
// epoll_wait(2) only when no answer is queued: the system calls ldplayer's querier makes, and
// nothing else (no send or receive time stamps, no per-query record, no trace decoding). Its
// CPU time per answer is what the kernel's UDP path costs on this machine, so a generator
// measured against dnsperf cannot go below this ratio without leaving the socket API.
//
// Queries come from a dnsperf data file ("name type" a line), are encoded once at start
// (RD set, no EDNS: as dnsperf sends them) and cycled through. Only loopback servers are
// accepted, and the run is bounded by its seconds.
//
// Build: cc -O2 -Wall -o udp-floor bench/udp-floor.c
// Usage: udp-floor -s 127.0.0.1 -p PORT -d FILE [-l SECONDS] [-q IN_FLIGHT] [-b BATCH] [-t] [-g]
//        (-t: ask for kernel receive time stamps, as ldplayer does; -g: send each run of
//        equal-sized queries in a batch as one UDP GSO datagram, which the receiving socket
//        splits again: what segmentation offload would save, for traces whose queries come in
//        runs of one size)
// Prints one JSON object: sent, answered, lost, seconds, qps, user_s, sys_s, cpu_us_per_answer.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

enum { MAX_QUERIES = 1 << 20, MAX_WIRE = 300, MAX_BATCH = 64, IDS = 65536 };

struct query {
  uint16_t len;
  uint8_t wire[MAX_WIRE];
};

static const struct {
  const char *name;
  uint16_t code;
} types[] = {{"A", 1},      {"NS", 2},     {"CNAME", 5}, {"SOA", 6},   {"PTR", 12},
             {"MX", 15},    {"TXT", 16},   {"AAAA", 28}, {"SRV", 33},  {"NAPTR", 35},
             {"DS", 43},    {"RRSIG", 46}, {"NSEC", 47}, {"DNSKEY", 48}, {"NSEC3", 50},
             {"SVCB", 64},  {"HTTPS", 65}, {"CAA", 257}, {"ANY", 255}};

static void die(const char *what) {
  fprintf(stderr, "udp-floor: %s\n", what);
  exit(2);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int type_code(const char *s) {
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strcasecmp(s, types[i].name) == 0) return types[i].code;
  if (strncasecmp(s, "TYPE", 4) == 0 && s[4]) return atoi(s + 4);
  return -1;
}

// Encodes "name type" as a query with id 0; returns its length, or -1 for a bad line.
static int encode(char *line, uint8_t *out) {
  char *name = strtok(line, " \t\r\n"), *type = strtok(NULL, " \t\r\n");
  int code = type ? type_code(type) : -1;
  if (!name || code < 0 || code > 65535) return -1;
  memset(out, 0, 12);
  out[2] = 1; // RD, as dnsperf sets it
  out[5] = 1; // one question
  size_t at = 12, name_len = strlen(name);
  if (name_len && name[name_len - 1] == '.') name[--name_len] = 0;
  for (char *label = name; name_len && label;) {
    char *dot = strchr(label, '.');
    size_t len = dot ? (size_t)(dot - label) : strlen(label);
    if (len == 0 || len > 63 || at + 1 + len + 5 > MAX_WIRE) return -1;
    out[at++] = (uint8_t)len;
    memcpy(out + at, label, len);
    at += len;
    label = dot ? dot + 1 : NULL;
  }
  out[at++] = 0;
  out[at++] = (uint8_t)(code >> 8);
  out[at++] = (uint8_t)code;
  out[at++] = 0;
  out[at++] = 1; // IN
  return (int)at;
}

// Sends `n` datagrams as UDP GSO super-datagrams (UDP_SEGMENT), one for each run of equal
// length: the kernel's UDP and IP output and the loopback delivery then run once a run, not
// once a datagram. Returns how many were sent, or -1 when none was.
static int send_segmented(int fd, struct mmsghdr *out, int n) {
  static uint8_t joined[MAX_BATCH * MAX_WIRE];
  int done = 0;
  while (done < n) {
    size_t len = out[done].msg_hdr.msg_iov->iov_len, at = 0;
    int run = 0;
    while (done + run < n && out[done + run].msg_hdr.msg_iov->iov_len == len) {
      memcpy(joined + at, out[done + run].msg_hdr.msg_iov->iov_base, len);
      at += len;
      run++;
    }
    union {
      char bytes[CMSG_SPACE(sizeof(uint16_t))];
      struct cmsghdr align;
    } control;
    struct iovec iov = {joined, at};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (run > 1) {
      msg.msg_control = control.bytes;
      msg.msg_controllen = sizeof control.bytes;
      struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      uint16_t size = (uint16_t)len;
      memcpy(CMSG_DATA(c), &size, sizeof size);
    }
    if (sendmsg(fd, &msg, 0) < 0) return done ? done : -1;
    done += run;
  }
  return done;
}

int main(int argc, char **argv) {
  const char *server = "127.0.0.1", *file = NULL;
  int port = 53, in_flight = 100, batch = 32, stamps = 0, gso = 0;
  double seconds = 10;
  for (int c; (c = getopt(argc, argv, "s:p:d:l:q:b:tg")) != -1;) {
    switch (c) {
    case 's': server = optarg; break;
    case 'p': port = atoi(optarg); break;
    case 'd': file = optarg; break;
    case 'l': seconds = atof(optarg); break;
    case 'q': in_flight = atoi(optarg); break;
    case 'b': batch = atoi(optarg); break;
    case 't': stamps = 1; break;
    case 'g': gso = 1; break;
    default: die("usage: udp-floor -s 127.0.0.1 -p PORT -d FILE [-l SECONDS] [-q IN_FLIGHT] [-b BATCH] [-t] [-g]");
    }
  }
  if (!file) die("no query file (-d)");
  if (seconds <= 0 || seconds > 600) die("-l must be in (0, 600] seconds");
  if (in_flight < 1 || in_flight >= IDS) die("-q must be in [1, 65535]");
  if (batch < 1 || batch > MAX_BATCH) die("-b must be in [1, 64]");
  if (port < 1 || port > 65535) die("bad port (-p)");
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, server, &addr.sin_addr) != 1) die("-s must be an IPv4 address");
  if ((ntohl(addr.sin_addr.s_addr) >> 24) != 127) die("-s must be a loopback address (127.0.0.0/8)");

  FILE *f = fopen(file, "r");
  if (!f) die("cannot open the query file");
  struct query *queries = malloc(sizeof *queries * MAX_QUERIES);
  if (!queries) die("out of memory");
  size_t n_queries = 0, bad = 0;
  char line[1024];
  while (n_queries < MAX_QUERIES && fgets(line, sizeof line, f)) {
    int len = encode(line, queries[n_queries].wire);
    if (len < 0) bad++;
    else queries[n_queries++].len = (uint16_t)len;
  }
  fclose(f);
  if (n_queries == 0) die("no query in the file");

  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) die("cannot open a socket to the server");
  int buffer = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  if (stamps) {
    int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) < 0) die("SO_TIMESTAMPING refused");
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event interest = {.events = EPOLLIN};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &interest) < 0) die("epoll");

  // Free ids (a stack), and for each id whether it is in flight and since when.
  static uint16_t free_ids[IDS];
  static uint8_t active[IDS];
  static uint64_t sent_at[IDS];
  size_t n_free = 0;
  int flying = 0;
  for (int id = IDS - 1; id >= 0; id--) free_ids[n_free++] = (uint16_t)id;

  struct mmsghdr out[MAX_BATCH], in[MAX_BATCH];
  struct iovec out_iov[MAX_BATCH], in_iov[MAX_BATCH];
  static uint8_t wires[MAX_BATCH][MAX_WIRE], answers[MAX_BATCH][4096];
  static char controls[MAX_BATCH][128];
  memset(in, 0, sizeof in);
  for (int i = 0; i < MAX_BATCH; i++) {
    in_iov[i] = (struct iovec){answers[i], sizeof answers[i]};
    in[i].msg_hdr.msg_iov = &in_iov[i];
    in[i].msg_hdr.msg_iovlen = 1;
  }

  // CPU time is counted from here: reading and encoding the queries is not the loop's.
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  const uint64_t timeout_ns = 1000000000u; // an answer later than 1 s is lost, as dnsperf -t 1
  uint64_t sent = 0, answered = 0, lost = 0, next = 0;
  uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), now = start, last_sweep = start;
  while (now < end) {
    // Fill the window in batches.
    while (flying < in_flight) {
      int n = in_flight - flying < batch ? in_flight - flying : batch;
      for (int i = 0; i < n; i++) {
        const struct query *q = &queries[(next + (uint64_t)i) % n_queries];
        uint16_t id = free_ids[--n_free];
        memcpy(wires[i], q->wire, q->len);
        wires[i][0] = (uint8_t)(id >> 8);
        wires[i][1] = (uint8_t)id;
        out_iov[i] = (struct iovec){wires[i], q->len};
        memset(&out[i], 0, sizeof out[i]);
        out[i].msg_hdr.msg_iov = &out_iov[i];
        out[i].msg_hdr.msg_iovlen = 1;
        active[id] = 1;
        sent_at[id] = now;
      }
      int done = gso ? send_segmented(fd, out, n) : sendmmsg(fd, out, (unsigned)n, 0);
      if (done < 0) done = 0; // ENOBUFS and the like: the queries not sent are given back
      for (int i = n - 1; i >= done; i--) {
        uint16_t id = (uint16_t)((wires[i][0] << 8) | wires[i][1]);
        active[id] = 0;
        free_ids[n_free++] = id;
      }
      flying += done;
      sent += (uint64_t)done;
      next += (uint64_t)done;
      if (done < n) break;
    }
    // Read what has come; wait only when nothing has.
    for (int i = 0; i < MAX_BATCH; i++) {
      in[i].msg_hdr.msg_control = stamps ? controls[i] : NULL;
      in[i].msg_hdr.msg_controllen = stamps ? sizeof controls[i] : 0;
    }
    int got = recvmmsg(fd, in, MAX_BATCH, MSG_DONTWAIT, NULL);
    for (int i = 0; i < got; i++) {
      if (in[i].msg_len < 12) continue;
      uint16_t id = (uint16_t)((answers[i][0] << 8) | answers[i][1]);
      if (active[id]) {
        active[id] = 0;
        free_ids[n_free++] = id;
        flying--;
        answered++;
      }
    }
    if (got <= 0) {
      struct epoll_event ready;
      epoll_wait(ep, &ready, 1, 10);
    }
    now = now_ns();
    // Ten times a second, queries past the timeout count as lost and give their ids back
    // (a scan of every id: under 0.1% of the run's CPU time).
    if (now - last_sweep >= timeout_ns / 10) {
      last_sweep = now;
      for (int id = 0; id < IDS; id++) {
        if (active[id] && now - sent_at[id] >= timeout_ns) {
          active[id] = 0;
          free_ids[n_free++] = (uint16_t)id;
          flying--;
          lost++;
        }
      }
    }
  }
  double wall = (double)(now - start) / 1e9;
  getrusage(RUSAGE_SELF, &after);
  double user = (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec) +
                (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e6;
  double sys = (double)(after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
               (double)(after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;
  printf("{\"sent\":%llu,\"answered\":%llu,\"lost\":%llu,\"bad_lines\":%zu,\"seconds\":%.3f,\"qps\":%.0f,"
         "\"user_s\":%.3f,\"sys_s\":%.3f,\"cpu_us_per_answer\":%.3f}\n",
         (unsigned long long)sent, (unsigned long long)answered, (unsigned long long)lost, bad, wall,
         (double)answered / wall, user, sys, answered ? (user + sys) * 1e6 / (double)answered : 0.0);
  return answered ? 0 : 1;
}
