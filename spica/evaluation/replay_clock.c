/* The clock and the randomness a kv_router replay reads, held (spica/evaluation/clock.py says why).
 *
 * Preloaded (LD_PRELOAD) into the processes that replay.
 * - Clock: a thread that calls spica_clock_hold(start_ns) reads, from clock_gettime and
 *   gettimeofday, a clock that starts at start_ns and moves on one microsecond per read, until
 *   it calls spica_clock_release(); every other thread, and that one before and after, reads the
 *   real clock.
 * - Randomness: getrandom called from Dynamo's own library (dynamo/_core*.so, which seeds its
 *   hash maps from it when imported) returns a fixed stream; every other caller (Python's
 *   os.urandom, tempfile names, ...) gets the kernel's.
 * The real calls go through syscall(), so this file needs nothing newer from the C library than
 * syscall() and dladdr().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define STEP_NS 1000ULL
#define DYNAMO_LIBRARY "/dynamo/_core"

static __thread int held = 0;
static __thread uint64_t now_ns = 0;
static uint64_t stream = 0;

void spica_clock_hold(uint64_t start_ns) { now_ns = start_ns; held = 1; }

void spica_clock_release(void) { held = 0; }

static uint64_t next_held_ns(void) { return now_ns += STEP_NS; }

int clock_gettime(clockid_t clock, struct timespec *out) {
  if (!held) return (int)syscall(SYS_clock_gettime, clock, out);
  uint64_t ns = next_held_ns();
  out->tv_sec = (time_t)(ns / 1000000000ULL);
  out->tv_nsec = (long)(ns % 1000000000ULL);
  return 0;
}

int gettimeofday(struct timeval *out, void *zone) {
  if (!held) return (int)syscall(SYS_gettimeofday, out, zone);
  uint64_t ns = next_held_ns();
  if (out) {
    out->tv_sec = (time_t)(ns / 1000000000ULL);
    out->tv_usec = (long)(ns % 1000000000ULL / 1000ULL);
  }
  return 0;
}

static int from_dynamo(const void *caller) {
  Dl_info info;
  return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, DYNAMO_LIBRARY);
}

ssize_t getrandom(void *buffer, size_t length, unsigned int flags) {
  if (!from_dynamo(__builtin_return_address(0))) return syscall(SYS_getrandom, buffer, length, flags);
  unsigned char *out = buffer;
  for (size_t done = 0; done < length; done += 8) { /* splitmix64 over an atomic counter */
    uint64_t z = __atomic_add_fetch(&stream, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    memcpy(out + done, &z, length - done < 8 ? length - done : 8);
  }
  return (ssize_t)length;
}
