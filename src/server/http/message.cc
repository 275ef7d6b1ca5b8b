#include "server/http/message.h"

#include <boost/json.hpp>

namespace cohort::http {

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return {};
}

std::string HttpRequest::QueryParam(std::string_view name, std::string_view fallback) const {
  auto it = query.find(std::string(name));
  return it == query.end() ? std::string(fallback) : it->second;
}

bool HttpRequest::HasQueryParam(std::string_view name) const {
  return query.find(std::string(name)) != query.end();
}

std::string HttpRequest::PathParam(std::string_view name) const {
  auto it = path_params.find(std::string(name));
  return it == path_params.end() ? std::string() : it->second;
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Text(int status, std::string body, std::string content_type) {
  HttpResponse r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Error(int status, std::string_view code, std::string_view message) {
  boost::json::object error;
  error["code"] = code;
  error["message"] = message;
  boost::json::object root;
  root["error"] = std::move(error);
  return Json(status, boost::json::serialize(root));
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PercentDecode(std::string_view in, bool plus_as_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%' && i + 2 < in.size()) {
      int hi = HexValue(in[i + 1]);
      int lo = HexValue(in[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_as_space && c == '+' ? ' ' : c);
  }
  return out;
}

}  // namespace cohort::http
