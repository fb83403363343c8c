/* Raw TCP ping-pong: the floor a message between two hosts cannot beat, measured in the same run as the
 * libraries (bench/hosts_compare.sh). One connection, TCP_NODELAY, N round trips of `bytes`; prints the
 * median half round trip in microseconds.
 *   tcp_pingpong server PORT BYTES ITERS
 *   tcp_pingpong client HOST PORT BYTES ITERS */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int full(int fd, char* p, size_t n, int rd) {
  while (n) {
    ssize_t k = rd ? read(fd, p, n) : write(fd, p, n);
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: tcp_pingpong server PORT BYTES ITERS | client HOST PORT BYTES ITERS\n");
    return 2;
  }
  const int server = strcmp(argv[1], "server") == 0;
  const char* host = server ? NULL : argv[2];
  const int port = atoi(argv[server ? 2 : 3]);
  const size_t bytes = (size_t)atol(argv[server ? 3 : 4]);
  const int iters = atoi(argv[server ? 4 : 5]);
  char* buf = calloc(bytes ? bytes : 1, 1);
  int fd, one = 1;
  if (server) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = INADDR_ANY};
    if (bind(ls, (struct sockaddr*)&a, sizeof a) || listen(ls, 1)) return perror("bind/listen"), 1;
    fd = accept(ls, NULL, NULL);
    close(ls);
  } else {
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    if (getaddrinfo(host, ps, &hints, &res)) return fprintf(stderr, "cannot resolve %s\n", host), 1;
    fd = socket(AF_INET, SOCK_STREAM, 0);
    int tries = 0;
    while (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
      if (++tries > 200) return perror("connect"), 1;
      usleep(10000);
    }
    freeaddrinfo(res);
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  double* t = calloc((size_t)iters, sizeof(double));
  for (int i = 0; i < iters; ++i) {
    double t0 = now();
    if (server) {
      if (full(fd, buf, bytes, 1) || full(fd, buf, bytes, 0)) return fprintf(stderr, "connection lost\n"), 1;
    } else {
      if (full(fd, buf, bytes, 0) || full(fd, buf, bytes, 1)) return fprintf(stderr, "connection lost\n"), 1;
    }
    t[i] = (now() - t0) / 2;
  }
  qsort(t, (size_t)iters, sizeof(double), cmp);
  if (!server) printf("%.2f\n", t[iters / 2] * 1e6);
  close(fd);
  return 0;
}
