// Writes the binary seed inputs of the fuzz targets (see tests/fuzz/CMakeLists.txt): encoded
// chunks, WAL segments, agent protocol streams and batch v4 bodies, made by the real encoders,
// each prefixed by the mode bytes its fuzzer reads first. The text seeds (HTTP, ingest, GraphQL) are written by
// hand. Usage: fuzz_seed_writer <corpus dir>   (writes into <dir>/chunk, <dir>/wal, ...)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "agent/protocol.h"
#include "core/batch_format.h"
#include "core/coding.h"
#include "series/chunk.h"
#include "wal/format.h"

namespace {

namespace fs = std::filesystem;
using namespace cohort;

void Write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string Chunk(const std::vector<series::Point>& points) {
  series::ChunkEncoder e;
  for (const auto& p : points) e.Append(p.step, p.time_ms, p.value);
  return e.Encode();
}

void ChunkSeeds(const fs::path& dir) {
  std::vector<std::pair<std::string, std::vector<series::Point>>> sets;
  std::vector<series::Point> regular, integers, floats32, mixed, extremes, decimals, ratios, system;
  for (int i = 0; i < 300; ++i) {
    regular.push_back({i, 1700000000000 + i * 1000, std::exp(-i / 100.0)});
    integers.push_back({i * 3, 1700000000000 + i * 997, double(i % 17)});
    floats32.push_back({i, 1700000000000 + i, double(float(i) / 7.0f)});
    // Scaled mode: decimals with exceptions (NaN, -0.0, infinity, a non-decimal), ratios.
    decimals.push_back({i, 1700000000000 + i * 10, double((i * 37) % 1000) / 1000});
    ratios.push_back({i, 1700000000000 + i * 10, 100.0 * double(i % 97) / 360});
    const int64_t t = 1700000000000 + i * 1000 + i % 7;  // a system metric: step = time
    system.push_back({t, t, double(i % 9) * 0.5});
  }
  decimals[0].value = std::numeric_limits<double>::quiet_NaN();
  decimals[7].value = -0.0;
  decimals[150].value = std::numeric_limits<double>::infinity();
  decimals[299].value = std::acos(-1.0);
  mixed = {{5, 10, 1.5},
           {3, 9, -0.0},
           {7, 11, std::numeric_limits<double>::quiet_NaN()},
           {7, 12, std::numeric_limits<double>::infinity()},
           {1, 13, -std::numeric_limits<double>::infinity()},
           {2, 14, std::numeric_limits<double>::denorm_min()}};
  extremes = {{0, 0, 0},
              {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 1e308},
              {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), -1e308},
              {0, 0, 9007199254740992.0}};
  sets = {{"regular", regular},   {"integers", integers}, {"float32", floats32},
          {"mixed", mixed},       {"extremes", extremes}, {"one", {{0, 1, 2.0}}},
          {"decimals", decimals}, {"ratios", ratios},     {"system", system}};
  for (const auto& [name, points] : sets) {
    std::string chunk = Chunk(points);
    Write(dir, name + ".chunk", std::string(1, '\0') + chunk);
    Write(dir, name + ".fixcrc", std::string(1, '\1') + chunk);
    std::string raw(1, '\2');
    for (const auto& p : points) {
      coding::PutFixed64(&raw, uint64_t(p.step));
      coding::PutFixed64(&raw, uint64_t(p.time_ms));
      coding::PutFixed64(&raw, coding::DoubleBits(p.value));
    }
    Write(dir, name + ".points", raw);
  }
}

std::string Segment(uint64_t segment, const std::vector<std::string>& payloads) {
  std::string s = wal::EncodeSegmentHeader(segment);
  uint64_t offset = s.size();
  for (const auto& p : payloads) offset = wal::EncodeRecord(&s, offset, p);
  return s;
}

void WalSeeds(const fs::path& dir) {
  std::vector<std::string> small = {"a", "hello", std::string(100, 'x'), ""};
  // flags: mode 0 (raw), one segment; step byte 7.
  Write(dir, "small.raw", std::string("\x00\x07", 2) + Segment(1, small));
  Write(dir, "small.fixcrc", std::string("\x01\x03", 2) + Segment(1, small));
  std::string two = Segment(1, small) + "\xFF\xFESEG" + Segment(2, {"second", "segment"});
  Write(dir, "two_segments.raw", std::string("\x00\x20", 2) + two);
  // A record that spans three blocks, then a small one.
  std::string big(70000, 'b');
  Write(dir, "spanning.raw", std::string("\x00\x50", 2) + Segment(1, {"x", big, "y"}));
  std::string torn = Segment(1, {"complete", std::string(500, 't')});
  torn.resize(torn.size() - 100);
  Write(dir, "torn_tail.raw", std::string("\x00\x01", 2) + torn);
  // Built modes: payloads split at newlines; mode 3 damages the built files.
  Write(dir, "built.txt", std::string("\x02\x05", 2) + "one\ntwo\n*three\nfour");
  Write(dir, "built3.txt", std::string("\x0a\x09", 2) + "a\nb\nc\nd\ne\nf");
  Write(
      dir, "damaged.txt",
      std::string("\x07\x11", 2) + "one\n*two\nthree" + std::string("\x00\x00\x30\x00\x01\x07", 6));
}

batch::Batch SampleBatch() {
  batch::Batch b;
  b.keys = {"loss", "acc", "gpu.0.util"};
  b.cells = {{0, 0.5}, {1, 0.9}, {2, 77}};
  b.history = {{10, 1700000000000, 0, 2}};
  b.system = {{0, 1700000000500, 2, 1}};
  b.console = {{1700000000600, false, "epoch 1"}, {1700000000700, true, "warning"}};
  return b;
}

// Batch v4 bodies (core/batch_format.h) for the binary decoder; the first byte is the fuzzer's
// mode (bit 0: recompute the checksum).
void IngestBinarySeeds(const fs::path& dir) {
  auto write = [&](const std::string& name, const batch::Batch& b, char mode = 0) {
    std::string body;
    batch::Encode(b, &body);
    Write(dir, name, std::string(1, mode) + body);
  };
  batch::Batch full = SampleBatch();
  full.keys.push_back("caf\xc3\xa9");
  full.cells.push_back({3, -0.0});
  full.cells.push_back({0, std::numeric_limits<double>::quiet_NaN()});
  full.cells.push_back({1, std::numeric_limits<double>::infinity()});
  full.history.push_back({11, 1700000000007, 3, 1});
  full.history.push_back({-1, 1699999999990, 4, 2});  // time back, no step
  full.history.push_back({12, 1700000000100, 4, 2});  // the same keys as the previous row
  write("full.bin", full);
  write("full_fixcrc.bin", full, 1);
  batch::Batch history = full;
  history.system.clear();
  history.console.clear();
  write("history_only.bin", history);
  batch::Batch system = full;
  system.history.clear();
  system.console.clear();
  write("system_only.bin", system);
  batch::Batch console;
  console.console = full.console;
  write("console_only.bin", console);
  write("empty.bin", batch::Batch{});
  // Media rows (batch v4): an image set of two and a table, beside the scalars.
  batch::Batch media = full;
  media.keys.push_back("samples");
  media.keys.push_back("eval/preds");
  batch::MediaRow image;
  image.step = 12;
  image.time_ms = 1700000000200;
  image.key = uint32_t(media.keys.size() - 2);
  image.type = batch::MediaType::kImage;
  image.sha256 = std::string(64, 'a');
  image.size = 4096;
  image.mime = "image/png";
  image.width = 64;
  image.height = 48;
  image.caption = "caf\xc3\xa9";
  media.media.push_back(image);
  image.index = 1;
  image.sha256 = std::string(64, 'b');
  media.media.push_back(image);
  batch::MediaRow table = image;
  table.key = uint32_t(media.keys.size() - 1);
  table.index = 0;
  table.type = batch::MediaType::kTable;
  table.mime = "application/json";
  table.caption.clear();
  media.media.push_back(table);
  write("media.bin", media);
  write("media_fixcrc.bin", media, 1);
  std::string old;
  batch::Encode(full, &old);
  old[4] = 1;  // a version this build does not read
  Write(dir, "bad_version.bin", std::string(1, '\1') + old);
}

void ProtocolSeeds(const fs::path& dir) {
  std::string batch;
  batch::Encode(SampleBatch(), &batch);
  agent::OpenRequest open;
  open.session = 42;
  open.base_url = "http://127.0.0.1:1";
  open.project = "p";
  open.run_id = "r1";
  open.label = "rank_0";
  open.gpu_ids = std::vector<int>{0, 1};
  agent::FinishRequest finish;
  finish.exit_code = 0;

  std::string stream;
  agent::AppendFrame(agent::MessageType::kHello,
                     agent::ToJson(agent::HelloMessage{agent::kProtocolVersion, 123}),
                     &stream);
  agent::AppendFrame(agent::MessageType::kOpen, agent::ToJson(open), &stream);
  agent::AppendFrame(agent::MessageType::kLog, agent::NumberedPayload(1, batch), &stream);
  agent::AppendFrame(agent::MessageType::kUpdate,
                     agent::NumberedPayload(2, R"({"config": {"lr": 0.1}})"), &stream);
  agent::AppendFrame(agent::MessageType::kFlush, agent::NumberedPayload(3, ""), &stream);
  agent::AppendFrame(agent::MessageType::kFinish, agent::NumberedPayload(4, agent::ToJson(finish)),
                     &stream);
  Write(dir, "session.stream", std::string("\x00\x05", 2) + stream);
  Write(dir, "session_bytewise.stream", std::string("\x00\x00", 2) + stream);
  Write(dir, "log.payload", std::string("\x01\x05", 2) + agent::NumberedPayload(1, batch));
  Write(dir, "open.payload", std::string("\x01\x03", 2) + agent::ToJson(open));
  Write(dir, "finish.payload",
        std::string("\x01\x08", 2) + agent::NumberedPayload(9, agent::ToJson(finish)));
  Write(dir, "error.payload",
        std::string("\x01\x0b", 2) + agent::ErrorJson(Status::InvalidArgument("bad")));
  agent::OpenReply reply;
  reply.ok = true;
  reply.entity = "e";
  Write(dir, "open_reply.payload", std::string("\x01\x04", 2) + agent::ToJson(reply));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  fs::path root = argv[1];
  ChunkSeeds(root / "chunk");
  WalSeeds(root / "wal");
  ProtocolSeeds(root / "protocol");
  IngestBinarySeeds(root / "ingest_binary");
  return 0;
}
