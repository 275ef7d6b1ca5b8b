// FakeCohortServer: just enough of the Cohort HTTP API (docs/api.md) for end-to-end tests of the
// agent and the client library: viewer, run upsert, writer join/heartbeat/finish, batches with
// the server's exactly-once rule per (writer, seq), alerts raised by code (one open alert per
// writer and title: a repeat bumps its count). It records what a real server would store.
// Batches are batch v4 bodies with their seq in the Cohort-Batch-Seq header, read with the
// server's own decoder (server/api/ingest_binary_decode.h).
//
// Threading: all accessors are thread-safe (FakeHttpServer runs handlers under its mutex; this
// class keeps its own, mu_, for the stored state, taken after FakeHttpServer's).
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "agent/alert_body.h"
#include "agent/fake_http_server_for_test.h"
#include "core/json.h"
#include "core/mutex.h"
#include "server/api/ingest_binary_decode.h"

namespace cohort::agent::testing {

class FakeCohortServer {
 public:
  struct Writer {
    bool joined = false;
    std::string state;  // "running" after join, then the finish state
    int64_t exit_code = -1;
    int joins = 0;
    int64_t next_step = 0;
    bool primary = false;
  };
  struct Alert {
    std::string label, title, text, level;
    int64_t time_ms = 0;
    int count = 0;  // posts of this (label, title)
  };

  explicit FakeCohortServer(int port = 0)
      : http_([this](const FakeRequest& r) { return Handle(r); }, port) {}

  std::string url() const { return http_.url(); }
  const FakeHttpServer& http() const { return http_; }

  // (label, key, step) -> value of stored history points.
  std::map<std::tuple<std::string, std::string, int64_t>, double> points() const {
    MutexLock lock(&mu_);
    return points_;
  }
  size_t point_count(const std::string& label) const {
    MutexLock lock(&mu_);
    size_t n = 0;
    for (const auto& [k, v] : points_) n += std::get<0>(k) == label;
    return n;
  }
  int64_t duplicate_batches() const {
    MutexLock lock(&mu_);
    return duplicates_;
  }
  // Points stored twice for the same (label, key, step): must stay 0.
  int64_t overwritten_points() const {
    MutexLock lock(&mu_);
    return overwritten_;
  }
  std::vector<std::pair<std::string, std::string>> console() const {  // (label, text)
    MutexLock lock(&mu_);
    return console_;
  }
  std::set<std::string> system_keys(const std::string& label) const {
    MutexLock lock(&mu_);
    auto it = system_.find(label);
    return it == system_.end() ? std::set<std::string>{} : it->second;
  }
  std::map<std::string, Writer> writers() const {
    MutexLock lock(&mu_);
    return writers_;
  }
  std::string run_config() const {
    MutexLock lock(&mu_);
    return json::Serialize(config_);
  }
  // The run's summary and name/group/job_type/notes/tags as merged from PATCH requests.
  std::string run_summary() const {
    MutexLock lock(&mu_);
    return json::Serialize(summary_);
  }
  std::string run_fields() const {
    MutexLock lock(&mu_);
    return json::Serialize(fields_);
  }
  // Alerts by (label, title), in the order they were opened.
  std::vector<Alert> alerts() const {
    MutexLock lock(&mu_);
    return alerts_;
  }
  int alert_posts() const {
    MutexLock lock(&mu_);
    return alert_posts_;
  }
  // The next `n` alert posts are stored but answered 500 (an answer lost on its way: the agent
  // retries what the server already holds).
  void fail_alert_answers(int n) {
    MutexLock lock(&mu_);
    fail_alert_answers_ = n;
  }
  bool run_exists() const {
    MutexLock lock(&mu_);
    return run_exists_;
  }
  void set_run_exists(bool v) {
    MutexLock lock(&mu_);
    run_exists_ = v;
  }

 private:
  static std::vector<std::string> Split(const std::string& path) {
    std::vector<std::string> parts;
    size_t start = 1;
    while (start <= path.size()) {
      size_t end = path.find('/', start);
      if (end == std::string::npos) end = path.size();
      parts.push_back(path.substr(start, end - start));
      start = end + 1;
    }
    return parts;
  }

  FakeResponse Handle(const FakeRequest& r) {
    MutexLock lock(&mu_);
    auto p = Split(r.path);  // api v1 runs e p run writers label verb
    if (r.path == "/api/v1/viewer") return {200, R"({"entity":"alice","role":"admin"})", {}};
    const bool batch = p.size() == 9 && p[8] == "batches";
    auto body = json::Parse(r.body.empty() || batch ? "{}" : r.body);
    if (!body.ok() || !body->is_object()) return {400, R"({"error":{"code":"invalid_argument"}})", {}};
    const auto& o = body->as_object();
    if (p.size() == 5 && p[2] == "runs" && r.method == "POST") {  // upsert
      std::string resume = o.contains("resume") ? std::string(o.at("resume").as_string()) : "allow";
      if (resume == "never" && run_exists_) {
        return {409, R"({"error":{"code":"already_exists","message":"run exists"}})", {}};
      }
      if (auto* c = o.if_contains("config"); c && c->is_object()) {
        for (auto& kv : c->as_object()) config_[kv.key()] = kv.value();
      }
      run_exists_ = true;
      return {201, R"({"id":"r","name":"fake-run"})", {}};
    }
    if (p.size() == 6 && r.method == "PATCH") {
      if (auto* c = o.if_contains("config"); c && c->is_object()) {
        for (auto& kv : c->as_object()) config_[kv.key()] = kv.value();
      }
      if (auto* c = o.if_contains("summary"); c && c->is_object()) {
        for (auto& kv : c->as_object()) summary_[kv.key()] = kv.value();
      }
      for (const char* f : {"name", "group", "job_type", "notes", "tags"}) {
        if (auto* v = o.if_contains(f)) fields_[f] = *v;
      }
      return {200, "{}", {}};
    }
    if (p.size() == 7 && p[6] == "writers") {  // join
      std::string label(o.at("label").as_string());
      Writer& w = writers_[label];
      w.joined = true;
      w.state = "running";
      ++w.joins;
      if (auto* pr = o.if_contains("primary"); pr && pr->is_bool()) w.primary = pr->as_bool();
      return {201, "{\"label\":\"" + label + "\",\"next_step\":" + std::to_string(w.next_step) +
                       "}",
              {}};
    }
    if (p.size() == 9 && p[6] == "writers") {
      const std::string& label = p[7];
      Writer& w = writers_[label];
      if (p[8] == "heartbeat") return {200, R"({"ok":true})", {}};
      if (p[8] == "alerts" && r.method == "POST") {
        if (Status st = CheckAlertBody(r.body); !st.ok()) {
          return {400,
                  "{\"error\":{\"code\":\"invalid_argument\",\"message\":" +
                      json::Serialize(boost::json::value(st.message())) + "}}",
                  {}};
        }
        ++alert_posts_;
        std::string title(o.at("title").as_string());
        auto it = std::find_if(alerts_.begin(), alerts_.end(), [&](const Alert& a) {
          return a.label == label && a.title == title;
        });
        const bool opened = it == alerts_.end();
        if (opened) {
          alerts_.push_back(Alert{label, title, std::string(o.at("text").as_string()),
                                  std::string(o.at("level").as_string()),
                                  o.at("time_ms").as_int64(), 0});
          it = alerts_.end() - 1;
        }
        ++it->count;
        if (fail_alert_answers_ > 0) {
          --fail_alert_answers_;
          return {500, R"({"error":{"code":"internal"}})", {}};
        }
        return {200, std::string("{\"opened\":") + (opened ? "true" : "false") + "}", {}};
      }
      if (p[8] == "finish") {
        w.state = o.contains("state") ? std::string(o.at("state").as_string())
                                      : (o.at("exit_code").as_int64() == 0 ? "finished" : "failed");
        if (auto* c = o.if_contains("exit_code"); c && c->is_int64()) w.exit_code = c->as_int64();
        return {200, "{}", {}};
      }
      if (p[8] == "batches") {
        auto seq = api::ParseBatchSeqHeader(r.batch_seq);
        if (!api::IsBinaryBatchContentType(r.content_type) || !seq.ok()) {
          return {415, R"({"error":{"code":"unsupported_media_type"}})", {}};
        }
        auto batch = api::DecodeBinaryIngestBatch(r.body, *seq, api::ApiLimits{});
        if (!batch.ok()) {
          return {400, "{\"error\":{\"code\":\"invalid_argument\",\"message\":" +
                           json::Serialize(boost::json::value(batch.status().message())) + "}}",
                  {}};
        }
        if (!seqs_[label].insert(*seq).second) {
          ++duplicates_;
          return {200, R"({"duplicate":true,"points":0})", {}};
        }
        std::vector<int64_t> steps = batch->history_step;
        for (int64_t& step : steps) {
          if (step < 0) step = w.next_step;  // the server assigns it
          w.next_step = std::max(w.next_step, step + 1);
        }
        for (const auto& c : batch->columns) {
          if (c.system) {
            system_[label].insert(c.key.substr(7));  // without "system/"
            continue;
          }
          for (size_t i = 0; i < c.rows.size(); ++i) {
            auto key = std::make_tuple(label, c.key, steps[c.rows[i]]);
            if (points_.count(key)) ++overwritten_;
            points_[key] = c.values[i];
          }
        }
        for (const auto& line : batch->console) console_.emplace_back(label, line.text);
        return {200,
                "{\"duplicate\":false,\"points\":" + std::to_string(batch->points()) + "}",
                {}};
      }
    }
    return {404, R"({"error":{"code":"not_found"}})", {}};
  }

  mutable Mutex mu_;
  std::map<std::tuple<std::string, std::string, int64_t>, double> points_ COHORT_GUARDED_BY(mu_);
  std::map<std::string, std::set<int64_t>> seqs_ COHORT_GUARDED_BY(mu_);
  std::map<std::string, std::set<std::string>> system_ COHORT_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, std::string>> console_ COHORT_GUARDED_BY(mu_);
  std::map<std::string, Writer> writers_ COHORT_GUARDED_BY(mu_);
  boost::json::object config_ COHORT_GUARDED_BY(mu_);
  boost::json::object summary_ COHORT_GUARDED_BY(mu_);
  boost::json::object fields_ COHORT_GUARDED_BY(mu_);
  std::vector<Alert> alerts_ COHORT_GUARDED_BY(mu_);
  int alert_posts_ COHORT_GUARDED_BY(mu_) = 0;
  int fail_alert_answers_ COHORT_GUARDED_BY(mu_) = 0;
  bool run_exists_ COHORT_GUARDED_BY(mu_) = false;
  int64_t duplicates_ COHORT_GUARDED_BY(mu_) = 0;
  int64_t overwritten_ COHORT_GUARDED_BY(mu_) = 0;
  FakeHttpServer http_;  // last: stops (joins its threads) before the state above goes
};

}  // namespace cohort::agent::testing
