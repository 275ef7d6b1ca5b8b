// `cohort alerts ls` (a project's alerts, or every project's, as an aligned table or JSON) and
// `cohort alerts ack` (acknowledges one), over the alerts API (docs/api.md "Alerts",
// docs/cli.md).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/read_client.h"
#include "core/json.h"
#include "core/text_encoding.h"

namespace cohort::cli {
namespace {

namespace bj = boost::json;

int Fail(const char* cmd, const Status& s) {
  std::fprintf(stderr, "cohort alerts %s: %s\n", cmd, s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

struct LsOpts {
  std::string project, entity, state, level, run, color = "auto";
  int limit = 50;
  bool json = false;
};

struct AckOpts {
  std::string id, project, entity;
};

// The most alerts GET /api/v1/alerts/{entity}/{project} lists (docs/api.md).
constexpr int kApiMaxAlerts = 1000;

std::string AlertsPath(const std::string& entity, const std::string& project) {
  return "/api/v1/alerts/" + PercentEncode(entity) + "/" + PercentEncode(project);
}

// A level in the colour of the run states it is as bad as (ERROR: red as failed, WARN: yellow
// as killed; output.h ColorState).
std::string ColorLevel(const std::string& level, bool color) {
  const char* code = level == "ERROR" ? "31" : level == "WARN" ? "33" : nullptr;
  if (!color || code == nullptr) return level;
  return std::string("\x1b[") + code + "m" + level + "\x1b[0m";
}

std::string OptTime(const bj::value& a, std::string_view key) {
  const bj::value* f = a.is_object() ? a.as_object().if_contains(key) : nullptr;
  return f && f->is_int64() ? FormatTime(f->as_int64()) : "-";
}

int RunLs(const LsOpts& o) {
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail("ls", client.status());
  std::string entity = o.entity;
  std::string run_id;
  std::vector<std::string> projects;
  if (!o.project.empty()) projects.push_back(o.project);
  if (o.run.find('/') != std::string::npos) {
    auto ref = (*client)->ParseRun(o.run);
    if (!ref.ok()) return Fail("ls", ref.status());
    if (!o.project.empty() && o.project != ref->project) {
      return Fail("ls",
                  Status::InvalidArgument("--run " + o.run + " is not in --project " + o.project));
    }
    entity = ref->entity;
    run_id = ref->run_id;
    projects = {ref->project};
  } else if (!o.run.empty()) {
    if (o.project.empty()) {
      return Fail("ls", Status::InvalidArgument(
                            "--run: give project/run_id, or --project with a bare run id"));
    }
    run_id = o.run;
  }
  if (entity.empty()) {
    auto e = (*client)->Entity();
    if (!e.ok()) return Fail("ls", e.status());
    entity = *e;
  }
  const bool with_project = projects.empty();  // every project: a PROJECT column
  if (projects.empty()) {
    auto res = (*client)->Get("/api/v1/projects", {{"entity", entity}});
    if (!res.ok()) return Fail("ls", res.status());
    for (const bj::value& p : res->as_object().at("projects").as_array()) {
      projects.push_back(StrField(p, "project"));
    }
  }
  // Each project's newest alerts (the API's maximum: a count of what the limit leaves out),
  // merged newest first (opened time, then id: the server's order within a project).
  std::vector<bj::value> all;
  bool capped = false;  // a project has more than the API lists
  for (const std::string& project : projects) {
    Query q = {{"state", o.state},
               {"level", o.level},
               {"run", run_id},
               {"limit", std::to_string(kApiMaxAlerts)}};
    auto res = (*client)->Get(AlertsPath(entity, project), q);
    if (!res.ok()) return Fail("ls", res.status());
    const bj::value* list = res->is_object() ? res->as_object().if_contains("alerts") : nullptr;
    if (list == nullptr || !list->is_array()) {
      return Fail("ls", Status::Unavailable("the server's answer has no \"alerts\" list"));
    }
    capped = capped || list->as_array().size() >= size_t(kApiMaxAlerts);
    for (const bj::value& a : list->as_array()) all.push_back(a);
  }
  std::stable_sort(all.begin(), all.end(), [](const bj::value& a, const bj::value& b) {
    int64_t ta = IntField(a, "opened_ms"), tb = IntField(b, "opened_ms");
    return ta != tb ? ta > tb : IntField(a, "id") > IntField(b, "id");
  });
  const size_t total = all.size();
  if (o.limit > 0 && all.size() > size_t(o.limit)) all.resize(size_t(o.limit));
  // Said on stderr (the table or JSON on stdout stays whole) when the list is not everything.
  if (all.size() < total || capped) {
    std::fprintf(stderr, "(%zu of %s%zu alerts; %s)\n", all.size(), capped ? "at least " : "",
                 total,
                 capped ? "the server lists 1000 per project: narrow with --state, --level, --run"
                        : "--limit 0 shows all");
  }
  if (o.json) {
    std::printf("%s\n", CompactJson(bj::array(all.begin(), all.end())).c_str());
    return 0;
  }
  if (all.empty()) {
    std::fprintf(stderr, "no alerts\n");
    return 0;
  }
  const bool color = UseColor(stdout, o.color);
  std::vector<std::string> header = {"ID",    "RUN",    "WRITER", "LEVEL", "STATE",
                                     "COUNT", "OPENED", "ACKED",  "TITLE"};
  if (with_project) header.insert(header.begin() + 1, "PROJECT");
  Table table(header);
  for (const bj::value& a : all) {
    const std::string level = StrField(a, "level");
    std::vector<std::string> cells = {std::to_string(IntField(a, "id"))};
    if (with_project) cells.push_back(StrField(a, "project"));
    const std::string writer = StrField(a, "writer");
    cells.insert(cells.end(),
                 {StrField(a, "run"), writer.empty() ? "-" : writer, level, StrField(a, "state"),
                  std::to_string(IntField(a, "count")), OptTime(a, "opened_ms"),
                  OptTime(a, "acked_ms"), StrField(a, "title")});
    std::vector<std::string> shown;
    if (color) {
      shown.resize(cells.size());
      shown[with_project ? 4 : 3] = ColorLevel(level, true);
    }
    table.AddRow(std::move(cells), std::move(shown));
  }
  table.Print(stdout);
  return 0;
}

int RunAck(const AckOpts& o) {
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail("ack", client.status());
  // ID, project/ID or entity/project/ID.
  std::string entity = o.entity, project = o.project, id = o.id;
  if (size_t slash = id.rfind('/'); slash != std::string::npos) {
    auto ref = (*client)->ParseRun(id);  // the same shapes as a run path
    if (!ref.ok()) {
      return Fail(
          "ack", Status::InvalidArgument("ID: expected ID, project/ID or entity/project/ID, got '" +
                                         o.id + "'"));
    }
    entity = ref->entity;
    project = ref->project;
    id = ref->run_id;
  }
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    return Fail("ack",
                Status::InvalidArgument("ID: expected an alert id (a number), got '" + o.id + "'"));
  }
  if (project.empty()) {
    return Fail("ack", Status::InvalidArgument("give the project: --project P or P/" + id));
  }
  if (entity.empty()) {
    auto e = (*client)->Entity();
    if (!e.ok()) return Fail("ack", e.status());
    entity = *e;
  }
  auto res = (*client)->Post(AlertsPath(entity, project) + "/" + id + "/ack", bj::object{});
  if (!res.ok()) return Fail("ack", res.status());
  std::printf("acknowledged alert %s (%s, %s) by %s\n", id.c_str(), StrField(*res, "title").c_str(),
              StrField(*res, "state").c_str(), StrField(*res, "acked_by").c_str());
  return 0;
}

}  // namespace

Runner AddAlertsCommand(CLI::App& app) {
  auto ls = std::make_shared<LsOpts>();
  auto ack = std::make_shared<AckOpts>();
  auto* cmd = app.add_subcommand("alerts", "List and acknowledge alerts (reads the server's API)");
  cmd->require_subcommand(1);
  auto* ls_cmd = cmd->add_subcommand("ls", "List alerts, newest first (all projects by default)");
  ls_cmd->add_option("-p,--project", ls->project, "Project (default: every project)");
  ls_cmd->add_option("--entity", ls->entity, "Entity (default: the API key's)");
  ls_cmd->add_option("-s,--state", ls->state, "Only open or resolved alerts")
      ->check(CLI::IsMember({"open", "resolved"}));
  ls_cmd->add_option("-l,--level", ls->level, "Only alerts of this level")
      ->check(CLI::IsMember({"INFO", "WARN", "ERROR"}));
  ls_cmd->add_option("-r,--run", ls->run,
                     "Only this run's alerts: entity/project/run_id, project/run_id, or a run id "
                     "with --project");
  ls_cmd->add_option("-n,--limit", ls->limit, "At most this many, newest first (0: all)")
      ->check(kNotNegative)
      ->capture_default_str();
  ls_cmd->add_flag("--json", ls->json, "Print the alerts as a JSON array (the API's objects)");
  ls_cmd->add_option("--color", ls->color, "auto (terminal, NO_COLOR unset), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  auto* ack_cmd =
      cmd->add_subcommand("ack", "Acknowledge an alert (it stays open until it clears)");
  ack_cmd->add_option("id", ack->id, "ID with --project, project/ID or entity/project/ID")
      ->required();
  ack_cmd->add_option("-p,--project", ack->project, "Project of the alert");
  ack_cmd->add_option("--entity", ack->entity, "Entity (default: the API key's)");
  return [=]() -> int {
    if (!cmd->parsed()) return -1;
    if (ls_cmd->parsed()) return RunLs(*ls);
    return RunAck(*ack);
  };
}

}  // namespace cohort::cli
