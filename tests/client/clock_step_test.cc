// The client's waits under a step of the wall clock. A call's deadline, its wait for a reply and
// the topology refresh's pauses must run on the steady clock: this abseil times
// absl::Mutex::AwaitWithTimeout on CLOCK_REALTIME and absl::Now() is the wall clock, so a step back
// (an NTP step, a VM resumed) used to stretch a wait by the step, and a check behind a server that
// does not answer hung for an hour instead of failing by its policy after the timeout.
//
// The test runs itself again as a child under the wall-clock shim (tests/support/wall_shift.cc)
// and steps the child's wall clock back an hour every few milliseconds while the child waits on
// a server that accepts connections and never answers; every wait must end near its timeout.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "connection.h"
#include "gtest/gtest.h"
#include "rl/limit.h"
#include "rl/remote_limiter.h"
#include "steady_time.h"
#include "subprocess.h"
#include "test_files.h"

namespace rl {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr char kChildEnv[] = "RL_CLIENT_CLOCK_STEP_CHILD";
constexpr auto kTimeout = milliseconds(300);
constexpr auto kBound = milliseconds(5000);  // far below a step (an hour), far above a timeout

// A loopback port whose connections complete (the backlog) and are never read: a hung server.
int SilentListener(int* fd) {
  *fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(*fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(*fd, 64) != 0 || ::getsockname(*fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -1;
  }
  return ntohs(addr.sin_port);
}

bool Took(steady_clock::time_point start, const char* what) {
  const auto took = steady_clock::now() - start;
  const long long ms = std::chrono::duration_cast<milliseconds>(took).count();
  std::fprintf(stderr, "child: %s took %lld ms\n", what, ms);
  return took < kBound;
}

// The child: exits 0 when every wait ended within kBound.
int RunChild() {
  auto start = steady_clock::now();
  client_internal::Call call(1);
  if (call.WaitUntil(client_internal::DeadlineAfter(absl::FromChrono(kTimeout)))) return 2;
  if (!Took(start, "an unanswered call's wait")) return 3;

  int fd = -1;
  const int port = SilentListener(&fd);
  if (port <= 0) return 4;
  RemoteLimiterOptions options;
  options.port = static_cast<uint16_t>(port);
  options.timeout = kTimeout;
  auto limiter = RemoteLimiter::Create(options);
  if (!limiter.ok()) return 5;
  const Policy closed = *ParsePolicy("api", std::string_view("GCRA 5 1m FAIL_CLOSED"));
  start = steady_clock::now();
  absl::StatusOr<Decision> d = (*limiter)->Check(closed, "k");
  if (!d.ok() || d->allowed || d->decided_by != DecidedBy::kFailClosed) return 6;
  if (!Took(start, "a check against a silent server")) return 7;
  start = steady_clock::now();
  if ((*limiter)->Ping().ok()) return 8;
  if (!Took(start, "a ping against a silent server")) return 9;
  ::close(fd);
  return 0;
}

TEST(ClientClockStepTest, AStepOfTheWallClockBackDoesNotStretchAWait) {
  rl_test::TempDir dir;
  const std::string shift_path = dir.Write("shift", std::string(sizeof(int64_t), '\0'));
  const int shift_fd = ::open(shift_path.c_str(), O_RDWR);
  ASSERT_GE(shift_fd, 0);
  void* map = ::mmap(nullptr, sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, shift_fd, 0);
  ::close(shift_fd);
  ASSERT_NE(map, MAP_FAILED);
  volatile int64_t* shift = static_cast<volatile int64_t*>(map);

  ::setenv("LD_PRELOAD", RL_WALL_SHIFT_PATH, 1);
  ::setenv("RL_TEST_WALL_SHIFT_FILE", shift_path.c_str(), 1);
  ::setenv(kChildEnv, "1", 1);
  rl_test::SpawnOptions spawn;
  spawn.output = rl_test::SpawnOptions::Output::kInherit;
  rl_test::Subprocess child;
  const bool started = child.Start({"/proc/self/exe"}, spawn);
  ::unsetenv("LD_PRELOAD");
  ::unsetenv("RL_TEST_WALL_SHIFT_FILE");
  ::unsetenv(kChildEnv);
  ASSERT_TRUE(started);

  // An hour back every 10 ms, whatever the child is doing: each of its waits spans many steps.
  const auto start = steady_clock::now();
  std::optional<int> rc;
  for (int64_t step = 1; !rc; ++step) {
    *shift = -step * 3'600'000;
    rc = child.Wait(milliseconds(10));
    if (!rc && steady_clock::now() - start > std::chrono::seconds(60)) {
      child.Kill();
      FAIL() << "the child still waits after 60 s: a wall-clock step stretched a wait";
    }
  }
  EXPECT_EQ(*rc, 0) << "the child's exit code names the wait that failed (RunChild)";
  ::munmap(map, sizeof(int64_t));
}

}  // namespace
}  // namespace rl

int main(int argc, char** argv) {
  if (std::getenv(rl::kChildEnv) != nullptr) return rl::RunChild();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
