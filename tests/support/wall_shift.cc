// An LD_PRELOAD shim for tests: shifts the wall clock (CLOCK_REALTIME, gettimeofday, time) of the
// process it is loaded into, leaving the monotonic clocks alone. It stands for a machine whose
// clock is ahead (or, with a negative shift, behind): a VM restored from a snapshot, a service
// started before time sync. The shift is RL_TEST_WALL_SHIFT_MS milliseconds, fixed; or, with
// RL_TEST_WALL_SHIFT_FILE, the int64 (host byte order) in the first 8 bytes of that file, read at
// every call, so a test can step the clock of a running process by rewriting it. libfaketime
// deadlocks redis-server; this shim takes no lock and allocates nothing.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace {

using ClockGettime = int (*)(clockid_t, struct timespec*);

// The mapped shift file, or null; set once by the first call (a race only maps it twice).
std::atomic<const volatile int64_t*> g_shift_file{nullptr};
std::atomic<bool> g_shift_file_tried{false};

int64_t ShiftMs() {
  static const int64_t fixed = [] {
    const char* v = std::getenv("RL_TEST_WALL_SHIFT_MS");
    return v != nullptr ? std::strtoll(v, nullptr, 10) : int64_t{0};
  }();
  if (!g_shift_file_tried.load(std::memory_order_acquire)) {
    const char* path = std::getenv("RL_TEST_WALL_SHIFT_FILE");
    if (path != nullptr) {
      const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        void* p = ::mmap(nullptr, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
        ::close(fd);
        if (p != MAP_FAILED) g_shift_file.store(static_cast<const volatile int64_t*>(p));
      }
    }
    g_shift_file_tried.store(true, std::memory_order_release);
  }
  const volatile int64_t* file = g_shift_file.load(std::memory_order_acquire);
  return file != nullptr ? *file : fixed;
}

ClockGettime Real() {
  static const ClockGettime real =
      reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
  return real;
}

bool IsWall(clockid_t id) {
  return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI;
}

}  // namespace

// Defined under their own names and exported under libc's (the asm labels), so they need not
// repeat the system headers' exact declarations.
extern "C" {

int ShiftedClockGettime(clockid_t id, struct timespec* ts) __asm__("clock_gettime");
int ShiftedGettimeofday(struct timeval* tv, void* tz) __asm__("gettimeofday");
time_t ShiftedTime(time_t* out) __asm__("time");

__attribute__((visibility("default"))) int ShiftedClockGettime(clockid_t id, struct timespec* ts) {
  const int rc = Real()(id, ts);
  if (rc != 0 || !IsWall(id)) return rc;
  const int64_t ns = int64_t{ts->tv_sec} * 1'000'000'000 + ts->tv_nsec + ShiftMs() * 1'000'000;
  ts->tv_sec = ns / 1'000'000'000;
  ts->tv_nsec = ns % 1'000'000'000;
  return 0;
}

__attribute__((visibility("default"))) int ShiftedGettimeofday(struct timeval* tv, void*) {
  struct timespec ts;
  if (ShiftedClockGettime(CLOCK_REALTIME, &ts) != 0) return -1;
  if (tv != nullptr) {
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return 0;
}

__attribute__((visibility("default"))) time_t ShiftedTime(time_t* out) {
  struct timespec ts;
  ShiftedClockGettime(CLOCK_REALTIME, &ts);
  if (out != nullptr) *out = ts.tv_sec;
  return ts.tv_sec;
}

}  // extern "C"
