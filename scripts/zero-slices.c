/*
 * The autonuma-benchmark pattern, for scripts/bench-workloads.sh to time
 * against numalab's tasks: PROCS processes, each maps BYTES and zeroes it
 * once (the first touch), then THREADS threads each zero their region
 * with one memset per loop, LOOPS times. The region is the whole buffer
 * when SHARED is 1 (numa01), else the thread's page-aligned slice, pages
 * [t*P/T, (t+1)*P/T) as numalab cuts them. CHUNK, if given, splits each
 * loop's memset into calls of CHUNK bytes (numalab's old pattern: 4 MiB),
 * to show what the size of one call costs. Written for numalab, not
 * copied from the original.
 *
 * Usage: zero-slices PROCS THREADS BYTES LOOPS SHARED [CHUNK]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char *buf;
static size_t bytes, pages, page;
static size_t chunk;
static long threads, loops, shared;

static void *worker(void *arg)
{
	long t = (long)arg;
	size_t a = shared ? 0 : t * pages / threads * page;
	size_t b = shared ? bytes : (t + 1) * pages / threads * page;
	for (long k = 0; k < loops; k++) {
		for (size_t x = a; x < b; x += chunk)
			memset(buf + x, 0, b - x < chunk ? b - x : chunk);
		__asm__ volatile("" : : : "memory");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: %s PROCS THREADS BYTES LOOPS SHARED [CHUNK]\n", argv[0]);
		return 2;
	}
	long procs = atol(argv[1]);
	threads = atol(argv[2]);
	loops = atol(argv[4]);
	shared = atol(argv[5]);
	page = sysconf(_SC_PAGESIZE);
	pages = (strtoull(argv[3], NULL, 10) + page - 1) / page;
	bytes = pages * page;
	chunk = argc == 7 ? strtoull(argv[6], NULL, 10) : bytes;
	if (chunk == 0)
		chunk = bytes;
	for (long p = 1; p < procs; p++)
		if (fork() == 0)
			break;
	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (buf == MAP_FAILED)
		return perror("mmap"), 1;
	memset(buf, 0, bytes);
	pthread_t th[threads];
	for (long t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)t))
			return perror("pthread_create"), 1;
	for (long t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	while (wait(NULL) > 0)
		;
	return 0;
}
