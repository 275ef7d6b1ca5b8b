/* An LD_PRELOAD library for the clock-jump tests (tests/fault/test_clock_jumps.py): shifts the
 * wall clock (CLOCK_REALTIME and friends, gettimeofday, time) of the process that loads it, and
 * of the processes it starts, by offsets that change at given moments: a clock that jumps.
 *
 *   COHORT_CLOCK_SHIFT="<after_s>:<offset_s>,<after_s>:<offset_s>,..."
 *
 * From <after_s> seconds after the process started (its monotonic clock, which stays true) the
 * wall clock reads real time + <offset_s>. Entries are in increasing <after_s>. Or
 *
 *   COHORT_CLOCK_SHIFT_FILE=<path>
 *
 * The offset in seconds is the number in that file (re-read at most every 20 ms; missing or
 * empty: 0), so a test can make the clock jump at the moment it chooses. Monotonic clocks are
 * never shifted: that is the point (code that times out on the wall clock breaks).
 * Thread-safe: the schedule is parsed once, at load time; the file's offset is cached in
 * atomics (a racing re-read is harmless). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define kMaxJumps 16

static int (*real_clock_gettime)(clockid_t, struct timespec*);
static const char* shift_file;
static _Atomic int64_t file_offset_ns;
static _Atomic int64_t file_read_mono_ns = -1000000000LL;
static double jump_after_s[kMaxJumps];
static int64_t jump_offset_ns[kMaxJumps];
static int jumps;
static int64_t start_mono_ns;

static int64_t MonoNs(void) {
  struct timespec ts;
  real_clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((constructor)) static void Init(void) {
  real_clock_gettime = (int (*)(clockid_t, struct timespec*))dlsym(RTLD_NEXT, "clock_gettime");
  start_mono_ns = MonoNs();
  shift_file = getenv("COHORT_CLOCK_SHIFT_FILE");
  const char* spec = getenv("COHORT_CLOCK_SHIFT");
  while (spec && *spec && jumps < kMaxJumps) {
    char* end = NULL;
    double after = strtod(spec, &end);
    if (end == spec || *end != ':') break;
    spec = end + 1;
    double offset = strtod(spec, &end);
    if (end == spec) break;
    jump_after_s[jumps] = after;
    jump_offset_ns[jumps] = (int64_t)(offset * 1e9);
    ++jumps;
    spec = *end == ',' ? end + 1 : end;
  }
}

static int64_t FileOffsetNs(void) {
  int64_t now = MonoNs();
  if (now - file_read_mono_ns < 20000000LL) return file_offset_ns;
  file_read_mono_ns = now;
  int fd = open(shift_file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return file_offset_ns = 0;
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  buf[n > 0 ? n : 0] = '\0';
  return file_offset_ns = (int64_t)(strtod(buf, NULL) * 1e9);
}

static int64_t OffsetNs(void) {
  if (shift_file) return FileOffsetNs();
  double since = (double)(MonoNs() - start_mono_ns) / 1e9;
  int64_t offset = 0;
  for (int i = 0; i < jumps && jump_after_s[i] <= since; ++i) offset = jump_offset_ns[i];
  return offset;
}

static int Shifted(clockid_t id) {
  return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI;
}

int clock_gettime(clockid_t id, struct timespec* ts) {
  if (!real_clock_gettime) Init();
  int rc = real_clock_gettime(id, ts);
  if (rc == 0 && Shifted(id) && (jumps > 0 || shift_file)) {
    int64_t ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + OffsetNs();
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
    if (ts->tv_nsec < 0) {
      ts->tv_nsec += 1000000000LL;
      ts->tv_sec -= 1;
    }
  }
  return rc;
}

int gettimeofday(struct timeval* tv, void* tz) {
  (void)tz;
  struct timespec ts;
  int rc = clock_gettime(CLOCK_REALTIME, &ts);
  if (rc == 0) { /* tv is declared nonnull */
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return rc;
}

time_t time(time_t* out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
