/* The same floor as bench/stat-floor-probe.mjs, in C: `lstat` of each path of a list (paths
 * relative to ROOT, separated by NUL), on one thread and then on two. Compiled and run by
 * bench/stat-floor.mjs when a C compiler is present; prints one JSON line of milliseconds. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

static char **paths;
static size_t count;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

struct range { size_t from, to, found; };

static void *stat_range(void *arg) {
  struct range *r = arg;
  struct stat st;
  for (size_t i = r->from; i < r->to; i++) if (lstat(paths[i], &st) == 0) r->found++;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3 || chdir(argv[1]) != 0) return 2;
  FILE *list = fopen(argv[2], "rb");
  if (list == NULL) return 2;
  fseek(list, 0, SEEK_END);
  long size = ftell(list);
  fseek(list, 0, SEEK_SET);
  char *text = malloc(size + 1);
  if (fread(text, 1, size, list) != (size_t)size) return 2;
  text[size] = 0;
  for (long i = 0; i < size; i++) if (text[i] == 0) count++;
  paths = malloc(sizeof(char *) * (count + 1));
  size_t n = 0;
  for (char *p = text; p < text + size; p += strlen(p) + 1) paths[n++] = p;

  struct range one = { 0, count, 0 };
  double start = now_ms();
  stat_range(&one);
  double one_ms = now_ms() - start;

  struct range a = { 0, count / 2, 0 }, b = { count / 2, count, 0 };
  pthread_t helper;
  start = now_ms();
  pthread_create(&helper, NULL, stat_range, &b);
  stat_range(&a);
  pthread_join(helper, NULL);
  double two_ms = now_ms() - start;
  printf("{\"entries\":%zu,\"found\":%zu,\"foundTwo\":%zu,\"oneMs\":%.1f,\"twoMs\":%.1f}\n", count, one.found, a.found + b.found, one_ms, two_ms);
  return 0;
}
