// vcpu-rtt: round trip of a cache line between CPU 0 and CPU 1 (ns),
// median of 2000 samples of 100 round trips. In a VM it says where the
// host runs the two vCPUs (docs/validation.md, "Zeros are written faster").
// Build: gcc -O2 -pthread -o vcpu-rtt scripts/vcpu-rtt.c
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static _Alignas(64) atomic_int flag;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void *peer(void *a){pin(1);for(int i=0;i<200000;i++){while(atomic_load_explicit(&flag,memory_order_acquire)!=1);atomic_store_explicit(&flag,0,memory_order_release);}return a;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(void){pthread_t t;pin(0);pthread_create(&t,0,peer,0);static double v[2000];
 for(int r=0;r<2000;r++){double t0=now();for(int i=0;i<100;i++){atomic_store_explicit(&flag,1,memory_order_release);while(atomic_load_explicit(&flag,memory_order_acquire)!=0);}v[r]=(now()-t0)/100;}
 pthread_join(t,0);qsort(v,2000,sizeof(double),cmp);printf("rtt_ns=%.0f\n",v[1000]);}
