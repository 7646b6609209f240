/* two_threads.h -- for the ThreadSanitizer checks: run fn(a) and fn(b) on two threads at once
 * and wait for both. */
#ifndef GP_TSAN_TWO_THREADS_H
#define GP_TSAN_TWO_THREADS_H

#include <pthread.h>

static inline void two_threads(void *(*fn)(void *), void *a, void *b) {
  pthread_t ta, tb;
  pthread_create(&ta, NULL, fn, a);
  pthread_create(&tb, NULL, fn, b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
}

#endif
