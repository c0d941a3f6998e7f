// Benchmarks for resp/: the per-command cost of parsing a pipelined batch of RL.CHECK commands
// (what one read() of a busy connection holds) and of writing RL.CHECK's five-integer reply.
// Run: build/bench/resp/bench_resp   (per_cmd, CPU time per command, is the figure to compare)
#include <benchmark/benchmark.h>

#include <string>
#include <string_view>
#include <vector>

#include "resp/parser.h"
#include "resp/writer.h"

namespace {

std::string MultibulkRlCheck(int i) {
  const std::string key = "user:" + std::to_string(100000 + i);
  std::string out;
  resp::Writer w(&out);  // an array of bulks is exactly a multibulk request
  w.ArrayHeader(6);
  for (std::string_view arg :
       {std::string_view("RL.CHECK"), std::string_view(key), std::string_view("TOKEN_BUCKET"),
        std::string_view("100"), std::string_view("60s"), std::string_view("HEADERS")}) {
    w.Bulk(arg);
  }
  return out;
}

std::string InlineRlCheck(int i) {
  return "RL.CHECK user:" + std::to_string(100000 + i) + " TOKEN_BUCKET 100 60s HEADERS\r\n";
}

// Parses the whole batch command by command, as a connection does after one read().
void ParseBatch(benchmark::State& state, std::string (*make)(int)) {
  const int batch = static_cast<int>(state.range(0));
  std::string input;
  for (int i = 0; i < batch; ++i) input += make(i);
  resp::Parser parser;
  std::vector<std::string_view> args;
  args.reserve(16);
  for (auto _ : state) {
    std::string_view rest = input;
    size_t consumed = 0;
    while (parser.Parse(rest, &consumed, &args) == resp::ParseStatus::kCommand) {
      benchmark::DoNotOptimize(args.data());
      rest.remove_prefix(consumed);
    }
    if (!rest.empty()) state.SkipWithError("batch did not parse");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * input.size());
  state.counters["per_cmd"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * batch,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_ParsePipelinedRlCheckMultibulk(benchmark::State& state) {
  ParseBatch(state, MultibulkRlCheck);
}
BENCHMARK(BM_ParsePipelinedRlCheckMultibulk)->Arg(1)->Arg(16)->Arg(128);

void BM_ParsePipelinedRlCheckInline(benchmark::State& state) { ParseBatch(state, InlineRlCheck); }
BENCHMARK(BM_ParsePipelinedRlCheckInline)->Arg(1)->Arg(16)->Arg(128);

// The batch arrives in 64-byte reads: measures the cost of resuming half-parsed commands.
void BM_ParseRlCheckIn64ByteReads(benchmark::State& state) {
  std::string input;
  for (int i = 0; i < 128; ++i) input += MultibulkRlCheck(i);
  resp::Parser parser;
  std::vector<std::string_view> args;
  std::string conn;
  for (auto _ : state) {
    conn.clear();
    size_t commands = 0;
    for (size_t off = 0; off < input.size(); off += 64) {
      conn.append(input, off, 64);
      size_t consumed = 0;
      size_t start = 0;
      while (parser.Parse(std::string_view(conn).substr(start), &consumed, &args) ==
             resp::ParseStatus::kCommand) {
        start += consumed;
        ++commands;
      }
      conn.erase(0, start);
    }
    if (commands != 128) state.SkipWithError("batch did not parse");
  }
  state.counters["per_cmd"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 128,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ParseRlCheckIn64ByteReads);

// RL.CHECK's reply: five integers (RESP2 array, RESP3 map with field names).
void BM_WriteFiveIntegerReply(benchmark::State& state) {
  const int protocol = static_cast<int>(state.range(0));
  std::string out;
  out.reserve(256);
  resp::Writer w(&out, protocol);
  int64_t n = 0;
  for (auto _ : state) {
    out.clear();
    if (protocol >= 3) {
      w.MapHeader(5);
      w.Bulk("allowed");
      w.Integer(1);
      w.Bulk("limit");
      w.Integer(100);
      w.Bulk("remaining");
      w.Integer(n & 127);
      w.Bulk("retry_after_ms");
      w.Integer(0);
      w.Bulk("reset_after_ms");
      w.Integer(59999 + n);
    } else {
      w.ArrayHeader(5);
      w.Integer(1);
      w.Integer(100);
      w.Integer(n & 127);
      w.Integer(0);
      w.Integer(59999 + n);
    }
    ++n;
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_WriteFiveIntegerReply)->Arg(2)->Arg(3);

}  // namespace
