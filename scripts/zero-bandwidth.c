// zb: zeroing bandwidth of N workers pinned to CPUs 0..N-1, as threads of
// one process or as single-threaded processes, each with its own buffer
// (or, with -S, its slice of one shared mapping).
// usage: zero-bandwidth MODE(t|p) N BYTES_PER_WORKER SECONDS
//          METHOD(memset|stosb|nt|loop) THP(def|huge|nohuge) PREFAULT(0|1) [S]
// Stores a byte that changes every sweep; ZERO=1 stores zeros, SAME=V the
// byte V every sweep, OFF=N offsets each buffer by N bytes. Prints each
// worker's GB/s of wall time, their sum, the aggregate and cpu= (the sum of
// bytes / thread CPU time, the figure docs/validation.md quotes).
// Build: gcc -O2 -mavx2 -pthread -o zero-bandwidth scripts/zero-bandwidth.c
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <immintrin.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct shared {
    atomic_int ready;
    atomic_int go;
    double t0[8], t1[8], c[8];
    uint64_t bytes[8];
};

static int N, prefault, thp, shared_buf, off;
static size_t B;
static double secs;
static const char *method;
static struct shared *sh;
static char *big;

static void zero(char *p, size_t n, int k) {
    if (getenv("ZERO")) k = 0;
    if (getenv("SAME")) k = atoi(getenv("SAME"));
    if (!strcmp(method, "memset")) {
        memset(p, k & 0xff, n);
    } else if (!strcmp(method, "stosb")) {
        size_t c = n;
        void *d = p;
        asm volatile("rep stosb" : "+D"(d), "+c"(c) : "a"(k & 0xff) : "memory");
    } else if (!strcmp(method, "nt")) {
        __m256i v = _mm256_set1_epi8((char)k);
        for (size_t i = 0; i < n; i += 32) _mm256_stream_si256((__m256i *)(p + i), v);
        _mm_sfence();
    } else {  // plain 32-byte stores
        __m256i v = _mm256_set1_epi8((char)k);
        for (size_t i = 0; i < n; i += 32) _mm256_store_si256((__m256i *)(p + i), v);
        asm volatile("" ::: "memory");
    }
}

static char *map(size_t n) {
    char *p = mmap(NULL, n + (2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(1); }
    p = (char *)(((uintptr_t)p + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
    if (thp == 1) madvise(p, n, MADV_HUGEPAGE);
    if (thp == 2) madvise(p, n, MADV_NOHUGEPAGE);
    return p;
}

static void worker(int i) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(i % sysconf(_SC_NPROCESSORS_ONLN), &s);
    sched_setaffinity(0, sizeof s, &s);
    char *p = (shared_buf ? big + (size_t)i * B : map(B)) + off;
    if (prefault) memset(p, 1, B);
    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->go)) ;
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    double t0 = now(), t;
    uint64_t bytes = 0;
    int k = 2;
    do {
        zero(p, B, k++);
        bytes += B;
        t = now();
    } while (t - t0 < secs);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    sh->c[i] = (c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9;
    sh->t0[i] = t0; sh->t1[i] = t; sh->bytes[i] = bytes;
}

static void *th(void *a) { worker((int)(intptr_t)a); return NULL; }

int main(int argc, char **argv) {
    if (argc < 8) { fprintf(stderr, "usage\n"); return 2; }
    char mode = argv[1][0];
    N = atoi(argv[2]);
    B = strtoull(argv[3], NULL, 0);
    secs = atof(argv[4]);
    method = argv[5];
    thp = !strcmp(argv[6], "huge") ? 1 : !strcmp(argv[6], "nohuge") ? 2 : 0;
    prefault = atoi(argv[7]);
    shared_buf = argc > 8 && argv[8][0] == 'S';
    if (getenv("OFF")) off = atoi(getenv("OFF"));
    sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared_buf) {
        if (mode != 't') { fprintf(stderr, "S only with threads\n"); return 2; }
        big = map(B * N);
    }
    pthread_t t[8];
    pid_t pid[8];
    for (int i = 0; i < N; i++) {
        if (mode == 't') pthread_create(&t[i], NULL, th, (void *)(intptr_t)i);
        else if ((pid[i] = fork()) == 0) { worker(i); _exit(0); }
    }
    while (atomic_load(&sh->ready) < N) ;
    atomic_store(&sh->go, 1);
    for (int i = 0; i < N; i++) {
        if (mode == 't') pthread_join(t[i], NULL);
        else waitpid(pid[i], NULL, 0);
    }
    double sum = 0, a = 1e99, b = 0, csum = 0;
    uint64_t tot = 0;
    for (int i = 0; i < N; i++) {
        double g = sh->bytes[i] / (sh->t1[i] - sh->t0[i]) / 1e9;
        sum += g;
        csum += sh->bytes[i] / sh->c[i] / 1e9;
        tot += sh->bytes[i];
        if (sh->t0[i] < a) a = sh->t0[i];
        if (sh->t1[i] > b) b = sh->t1[i];
        printf("w%d=%.1f ", i, g);
    }
    printf("sum=%.1f agg=%.1f cpu=%.1f\n", sum, tot / (b - a) / 1e9, csum);
    return 0;
}
