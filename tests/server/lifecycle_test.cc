// Process-level behaviour of the real server: SIGTERM/SIGINT finish replies and exit 0, SIGHUP
// reloads the config file's policies without dropping state (runtime policies survive, a broken
// file changes nothing), flags and the config file, and protected mode.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "resp_client.h"
#include "server_process.h"

namespace rl::test {
namespace {

std::string TempFile(const std::string& content) {
  char path[] = "/tmp/rl-server-test-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  std::ofstream(path) << content;
  return path;
}

void Rewrite(const std::string& path, const std::string& content) {
  std::string tmp = path + ".new";
  std::ofstream(tmp) << content;
  std::rename(tmp.c_str(), path.c_str());
}

// Polls `fn` up to 20 s (generous: a busy machine delays the server's signal handling).
template <typename Fn>
bool Eventually(Fn fn) {
  for (int i = 0; i < 400; ++i) {
    if (fn()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(LifecycleTest, SigtermFinishesRepliesAndExitsZero) {
  ServerProcess server({"--threads", "2"});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  std::string batch;
  for (int i = 0; i < 1000; ++i) batch += RespClient::Encode({"RL.CHECK", "t", "GCRA", "10", "1s"});
  ASSERT_TRUE(c.SendRaw(batch));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(c.Read().type, '*') << i;
  EXPECT_EQ(server.Terminate(), 0);
  EXPECT_TRUE(c.WaitClosed());
}

TEST(LifecycleTest, SigintExitsZero) {
  ServerProcess server;
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  ASSERT_EQ(c.Call({"PING"}).str, "PONG");
  server.Signal(SIGINT);
  EXPECT_EQ(server.Wait(10000), 0);
}

TEST(LifecycleTest, SighupReloadsPoliciesKeepingState) {
  std::string path = TempFile(
      "threads = 1\n"
      "[policies]\n"
      "api = \"FIXED_WINDOW 2 1m\"\n"
      "gone = \"GCRA 5 1s\"\n");
  ServerProcess server({"--config", path});
  ASSERT_GT(server.port(), 0);
  RespClient c(server.port());
  EXPECT_EQ(c.Call({"RL.CHECK", "u", "POLICY", "api"}).Ints()[0], 1);
  EXPECT_EQ(c.Call({"RL.CHECK", "u", "POLICY", "api"}).Ints()[0], 1);
  EXPECT_EQ(c.Call({"RL.CHECK", "u", "POLICY", "api"}).Ints()[0], 0);
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "runtime", "TOKEN_BUCKET", "7", "1m"}).str, "OK");
  ASSERT_EQ(c.Call({"RL.POLICY", "SET", "gone", "TOKEN_BUCKET", "9", "1m"}).str, "OK");

  Rewrite(path,
          "threads = 1\n"
          "[policies]\n"
          "api = \"FIXED_WINDOW 2 1m\"\n"
          "added = \"SLIDING_LOG 3 1s\"\n"
          "gone = \"GCRA 5 1s\"\n");
  server.Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] { return !c.Call({"RL.POLICY", "GET", "added"}).is_null(); }));
  EXPECT_EQ(c.Call({"RL.CHECK", "u", "POLICY", "api"}).Ints()[0], 0) << "state survived";
  EXPECT_EQ(c.Call({"RL.POLICY", "GET", "runtime"}).str, "TOKEN_BUCKET 7 1m")
      << "a runtime-only policy survives a reload";
  EXPECT_EQ(c.Call({"RL.POLICY", "GET", "gone"}).str, "GCRA 5 1s")
      << "the file wins for the names it defines";

  // A broken file changes nothing.
  Rewrite(path, "[policies]\napi = \"NOT_AN_ALGORITHM 1 1s\"\n");
  server.Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] {
    return c.Call({"INFO", "server"}).str.find("config_reloads_failed:1\r\n") != std::string::npos;
  })) << "the broken reload was not taken";
  EXPECT_EQ(c.Call({"RL.POLICY", "GET", "api"}).str, "FIXED_WINDOW 2 1m");
  EXPECT_EQ(c.Call({"PING"}).str, "PONG");

  // Dropping a policy from the file removes it.
  Rewrite(path, "[policies]\napi = \"FIXED_WINDOW 2 1m\"\n");
  server.Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] { return c.Call({"RL.POLICY", "GET", "added"}).is_null(); }));
  EXPECT_FALSE(c.Call({"RL.POLICY", "GET", "runtime"}).is_null());
  EXPECT_EQ(server.Terminate(), 0);
  std::remove(path.c_str());
}

TEST(LifecycleTest, ConfigFileSettingsAndFlagsWin) {
  std::string path = TempFile(
      "maxclients = 1\n"
      "requirepass = \"from-file\"\n"
      "[policies]\n"
      "p = \"GCRA 10 1s\"\n");
  // The flag overrides the file's maxclients; the file's password applies.
  ServerProcess server({"--config", path, "--maxclients", "5"});
  ASSERT_GT(server.port(), 0);
  RespClient a(server.port());
  RespClient b(server.port());
  EXPECT_EQ(a.Call({"PING"}).str, "NOAUTH Authentication required.");
  EXPECT_EQ(b.Call({"AUTH", "from-file"}).str, "OK");
  EXPECT_EQ(b.Call({"RL.POLICY", "GET", "p"}).str, "GCRA 10 1s");
  EXPECT_EQ(server.Terminate(), 0);
  std::remove(path.c_str());
}

int RunAndCapture(const std::string& args, std::string* output) {
  std::string cmd = std::string(RL_SERVER_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) output->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(LifecycleTest, ProtectedModeRefusesOpenBindWithoutPassword) {
  std::string out;
  EXPECT_EQ(RunAndCapture("--bind 0.0.0.0 --port 0", &out), 1);
  EXPECT_NE(out.find("--requirepass"), std::string::npos) << out;
  EXPECT_NE(out.find("--protected-mode no"), std::string::npos) << out;
}

TEST(LifecycleTest, HelpListsFlagsAndBadConfigFails) {
  std::string out;
  EXPECT_EQ(RunAndCapture("--help", &out), 0);
  for (const char* flag :
       {"--port", "--bind", "--threads", "--requirepass", "--config", "--maxclients", "--timeout",
        "--max-keys", "--max-memory", "--protected-mode"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag;
  }
  std::string path = TempFile("[policies]\nbad = \"GCRA x 1s\"\n");
  out.clear();
  EXPECT_NE(RunAndCapture("--port 0 --config " + path, &out), 0);
  EXPECT_NE(out.find("bad"), std::string::npos) << out;
  std::remove(path.c_str());
  out.clear();
  EXPECT_NE(RunAndCapture("--port 0 --no-such-flag", &out), 0);
}

}  // namespace
}  // namespace rl::test
