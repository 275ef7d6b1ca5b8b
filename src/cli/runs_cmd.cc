// `cohort runs ls` (aligned table of runs, state coloured on a terminal) and `cohort runs show`
// (one run: writers, states, last values); `cohort runs export` lives in export_cmd.cc.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/read_client.h"
#include "core/json.h"
#include "core/text_encoding.h"

namespace cohort::cli {
namespace {

namespace bj = boost::json;

int Fail(const char* cmd, const Status& s) {
  std::fprintf(stderr, "cohort %s: %s\n", cmd, s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

struct LsOpts {
  std::string project, entity, group, job_type, state, tag, sort = "-created", color = "auto";
  int limit = 50;
};

// One project's runs (up to `limit`, 0: all), in the server's order, appended to `runs`, each
// with its "project" set.
Status ListProject(ReadClient& client, const LsOpts& o, const std::string& entity,
                   const std::string& project, std::vector<bj::value>* runs, int64_t* total) {
  std::string cursor;
  int shown = 0;
  while (true) {
    int page = o.limit > 0 ? std::min(1000, o.limit - shown) : 1000;
    Query q = {{"group", o.group}, {"job_type", o.job_type}, {"state", o.state},
               {"tag", o.tag},     {"sort", o.sort},         {"limit", std::to_string(page)},
               {"cursor", cursor}};
    COHORT_ASSIGN_OR_RETURN(
        bj::value res,
        client.Get("/api/v1/runs/" + PercentEncode(entity) + "/" + PercentEncode(project), q));
    *total += IntField(res, "total");
    for (const bj::value& run : res.as_object().at("runs").as_array()) {
      runs->push_back(run);
      if (runs->back().is_object()) runs->back().as_object()["project"] = project;
      ++shown;
    }
    const bj::value* next = res.as_object().if_contains("next_cursor");
    if (!next || !next->is_string() || (o.limit > 0 && shown >= o.limit)) break;
    cursor = std::string(next->get_string());
  }
  return Status::Ok();
}

// Orders runs of several projects as `sort` orders each project's ("-created", "name"): false
// for a sort the CLI cannot repeat (config.<key>, summary.<key>), whose projects stay apart.
bool SortRuns(std::string_view sort, std::vector<bj::value>* runs) {
  const bool desc = !sort.empty() && sort.front() == '-';
  if (desc) sort.remove_prefix(1);
  if (sort == "created" || sort == "updated") {
    const std::string field = std::string(sort) + "_ms";
    std::stable_sort(runs->begin(), runs->end(), [&](const bj::value& a, const bj::value& b) {
      return desc ? IntField(a, field) > IntField(b, field)
                  : IntField(a, field) < IntField(b, field);
    });
    return true;
  }
  if (sort == "name" || sort == "state" || sort == "group" || sort == "job_type") {
    std::stable_sort(runs->begin(), runs->end(), [&](const bj::value& a, const bj::value& b) {
      return desc ? StrField(a, sort) > StrField(b, sort) : StrField(a, sort) < StrField(b, sort);
    });
    return true;
  }
  return false;
}

int RunLs(const LsOpts& o) {
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail("runs ls", client.status());
  std::string entity = o.entity;
  if (entity.empty()) {
    auto e = (*client)->Entity();
    if (!e.ok()) return Fail("runs ls", e.status());
    entity = *e;
  }
  std::vector<std::string> projects;
  if (!o.project.empty()) {
    projects.push_back(o.project);
  } else {
    auto res = (*client)->Get("/api/v1/projects", {{"entity", entity}});
    if (!res.ok()) return Fail("runs ls", res.status());
    for (const bj::value& p : res->as_object().at("projects").as_array()) {
      projects.push_back(StrField(p, "project"));
    }
  }
  const bool with_project = o.project.empty();
  std::vector<bj::value> runs;
  int64_t total = 0;
  for (const std::string& project : projects) {
    Status s = ListProject(**client, o, entity, project, &runs, &total);
    if (!s.ok()) return Fail("runs ls", s);
  }
  // Every project's first `limit` runs, merged in the sort's order: the first `limit` of all.
  if (projects.size() > 1 && SortRuns(o.sort, &runs) && o.limit > 0 &&
      runs.size() > size_t(o.limit)) {
    runs.resize(size_t(o.limit));
  }
  if (runs.empty()) {
    std::fprintf(stderr, "no runs\n");
    return 0;
  }
  const bool color = UseColor(stdout, o.color);
  std::vector<std::string> header = {"ID",       "NAME",    "STATE",   "GROUP",
                                     "JOB_TYPE", "WRITERS", "RUNTIME", "CREATED"};
  if (with_project) header.insert(header.begin(), "PROJECT");
  Table table(header);
  for (const bj::value& run : runs) {
    std::string state = StrField(run, "state");
    std::vector<std::string> cells;
    if (with_project) cells.push_back(StrField(run, "project"));
    cells.insert(
        cells.end(),
        {StrField(run, "id"), StrField(run, "name"), state, StrField(run, "group"),
         StrField(run, "job_type"), std::to_string(IntField(run, "writer_count")),
         FormatDuration(IntField(run, "runtime_ms")), FormatTime(IntField(run, "created_ms"))});
    std::vector<std::string> shown_cells;
    if (color) {
      shown_cells.resize(cells.size());
      shown_cells[with_project ? 3 : 2] = ColorState(state, true);
    }
    table.AddRow(std::move(cells), std::move(shown_cells));
  }
  table.Print(stdout);
  if (int64_t(table.rows()) < total) {
    std::fprintf(stderr, "(%zu of %lld runs; --limit 0 shows all)\n", table.rows(),
                 static_cast<long long>(total));
  }
  return 0;
}

std::string Yes(const bj::value& v, std::string_view key) {
  const bj::value* f = v.is_object() ? v.as_object().if_contains(key) : nullptr;
  return f && f->is_bool() && f->get_bool() ? "yes" : "";
}

std::string ExitText(const bj::value& v) {
  const bj::value* f = v.is_object() ? v.as_object().if_contains("exit_code") : nullptr;
  return f && f->is_number() ? std::to_string(IntField(v, "exit_code")) : "-";
}

int RunShow(const std::string& run_text, const std::string& color_mode) {
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail("runs show", client.status());
  auto ref = (*client)->ParseRun(run_text);
  if (!ref.ok()) return Fail("runs show", ref.status());
  auto run = (*client)->Get(ref->ApiPath());
  if (!run.ok()) return Fail("runs show", run.status());
  auto last = (*client)->Get(ref->ApiPath() + "/history", {{"buckets", "1"}});
  if (!last.ok()) return Fail("runs show", last.status());
  const bool color = UseColor(stdout, color_mode);
  const bj::value& r = *run;
  std::string tags;
  if (const bj::value* t = r.as_object().if_contains("tags"); t && t->is_array()) {
    for (const bj::value& tag : t->as_array()) {
      if (!tags.empty()) tags += ", ";
      if (tag.is_string()) tags += std::string(tag.get_string());
    }
  }
  auto field = [](const char* name, const std::string& value) {
    std::printf("%-10s%s\n", name, value.empty() ? "-" : value.c_str());
  };
  field("run", ref->Text());
  field("name", StrField(r, "name"));
  field("state", ColorState(StrField(r, "state"), color) + " (exit code " + ExitText(r) + ")");
  field("group", StrField(r, "group"));
  field("job_type", StrField(r, "job_type"));
  field("host", StrField(r, "host"));
  field("tags", tags);
  field("created", FormatTime(IntField(r, "created_ms")) + " UTC");
  field("runtime", FormatDuration(IntField(r, "runtime_ms")));

  const bj::array* writers = nullptr;
  if (const bj::value* w = r.as_object().if_contains("writers"); w && w->is_array()) {
    writers = &w->as_array();
  }
  std::printf("\nwriters (%zu)\n", writers ? writers->size() : size_t(0));
  Table wt({"LABEL", "PRIMARY", "STATE", "EXIT", "HOST", "PID", "HEARTBEAT"});
  std::vector<const bj::value*> sorted;
  if (writers) {
    for (const bj::value& w : *writers) sorted.push_back(&w);
  }
  std::sort(sorted.begin(), sorted.end(), [](const bj::value* a, const bj::value* b) {
    return NaturalLess(StrField(*a, "label"), StrField(*b, "label"));
  });
  {
    for (const bj::value* wp : sorted) {
      const bj::value& w = *wp;
      std::string state = StrField(w, "state");
      std::vector<std::string> shown;
      if (color) shown = {"", "", ColorState(state, true)};
      wt.AddRow({StrField(w, "label"), Yes(w, "primary"), state, ExitText(w), StrField(w, "host"),
                 IntField(w, "pid") > 0 ? std::to_string(IntField(w, "pid")) : "-",
                 FormatTime(IntField(w, "heartbeat_ms"))},
                std::move(shown));
    }
  }
  wt.Print(stdout, "  ");

  std::vector<std::vector<std::string>> last_rows;
  for (const bj::value& s : last->as_object().at("series").as_array()) {
    const bj::array& buckets = s.as_object().at("buckets").as_array();
    if (buckets.empty()) continue;
    const bj::value& b = buckets.back();
    auto num = [&](const char* k) {
      auto d = json::ToDouble(b.as_object().at(k));
      return d ? FormatDouble(*d) : std::string("?");
    };
    last_rows.push_back({StrField(s, "key"), StrField(s, "writer"),
                         std::to_string(IntField(b, "step_max")), num("last"), num("min"),
                         num("max"), std::to_string(IntField(b, "count"))});
  }
  std::sort(last_rows.begin(), last_rows.end(), [](const auto& a, const auto& b) {
    if (a[0] != b[0]) return a[0] < b[0];
    return NaturalLess(a[1], b[1]);
  });
  Table lt({"KEY", "WRITER", "STEP", "LAST", "MIN", "MAX", "POINTS"});
  for (auto& row : last_rows) lt.AddRow(std::move(row));
  std::printf("\nlast values (%zu series)\n", lt.rows());
  if (lt.rows() > 0) lt.Print(stdout, "  ");
  for (const char* field : {"summary", "config"}) {
    const bj::value* v = r.as_object().if_contains(field);
    if (v && v->is_object() && !v->as_object().empty()) {
      std::printf("\n%s\n  %s\n", field, CompactJson(*v).c_str());
    }
  }
  return 0;
}

}  // namespace

Runner AddRunsCommand(CLI::App& app) {
  auto ls = std::make_shared<LsOpts>();
  auto show_run = std::make_shared<std::string>();
  auto show_color = std::make_shared<std::string>("auto");
  auto* cmd = app.add_subcommand("runs", "List, show and export runs (reads the server's API)");
  cmd->require_subcommand(1);
  auto* ls_cmd = cmd->add_subcommand("ls", "List runs as a table (all projects by default)");
  ls_cmd->add_option("-p,--project", ls->project, "Project (default: every project)");
  ls_cmd->add_option("--entity", ls->entity, "Entity (default: the API key's)");
  ls_cmd->add_option("-g,--group", ls->group, "Only runs of this group");
  ls_cmd->add_option("-j,--job-type", ls->job_type, "Only runs of this job type");
  ls_cmd->add_option("-s,--state", ls->state, "Only these states (comma-separated)");
  ls_cmd->add_option("-t,--tag", ls->tag, "Only runs with this tag");
  ls_cmd
      ->add_option("--sort", ls->sort,
                   "created, updated, name, state, group, job_type; - first "
                   "for descending")
      ->capture_default_str();
  ls_cmd->add_option("-n,--limit", ls->limit, "At most this many runs (0: all)")
      ->check(kNotNegative)
      ->capture_default_str();
  ls_cmd->add_option("--color", ls->color, "auto (terminal, NO_COLOR unset), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  auto* show = cmd->add_subcommand("show", "Show one run: writers, states, last values");
  show->add_option("run", *show_run, "entity/project/run_id or project/run_id")->required();
  show->add_option("--color", *show_color, "auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  Runner export_runner = AddRunsExportCommand(*cmd);
  return [=]() -> int {
    if (!cmd->parsed()) return -1;
    if (ls_cmd->parsed()) return RunLs(*ls);
    if (show->parsed()) return RunShow(*show_run, *show_color);
    return export_runner();
  };
}

}  // namespace cohort::cli
