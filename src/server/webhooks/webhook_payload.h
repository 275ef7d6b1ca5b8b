// The bodies of alert webhook calls (docs/api.md "Alert webhooks"): the versioned generic JSON
// payload, and Slack- and Discord-compatible ones, built from an alert's AlertJSON (the
// contract's field names: id, entity, project, run, writer, level, title, text, state...), and
// the HMAC-SHA256 signature of generic payloads. Pure functions; thread-safe.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::server::webhooks {

// The version of the generic payload; a change that is not a pure addition bumps it.
inline constexpr int kGenericPayloadVersion = 1;
// The header that carries the signature of a generic payload with a secret.
inline constexpr const char* kSignatureHeader = "X-Cohort-Signature";

// The web UI's page of the alert's run (`<base_url>/?p=<entity>/<project>&run=<run>`), or of its
// project when it names no run; "" when base_url is empty.
std::string RunUrl(std::string_view base_url, const boost::json::object& alert);
// InvalidArgument naming the flag unless `url` can be the web UI's public address
// (`cohort server --public-url`): http:// or https:// with a host, no query or fragment.
Status ValidatePublicUrl(std::string_view url);

// `{"version":1,"event":...,"alert":{...},"run_url":...}` ("run_url" null when empty).
std::string GenericPayload(std::string_view event, const boost::json::object& alert,
                           std::string_view run_url);
// `{"text":..., "blocks":[...]}` (Slack incoming webhooks), text escaped for Slack's mrkdwn.
std::string SlackPayload(std::string_view event, const boost::json::object& alert,
                         std::string_view run_url);
// `{"content":..., "embeds":[...], "allowed_mentions":{"parse":[]}}` (Discord webhooks; alert
// text never pings anyone).
std::string DiscordPayload(std::string_view event, const boost::json::object& alert,
                           std::string_view run_url);
// The payload of `format` ("generic", "slack", "discord").
std::string FormatPayload(std::string_view format, std::string_view event,
                          const boost::json::object& alert, std::string_view run_url);

// "sha256=" + hex HMAC-SHA256 of `body` with `secret`.
std::string SignatureValue(std::string_view secret, std::string_view body);

// The headers ("Name: value") of a call: Content-Type, X-Cohort-Event, X-Cohort-Delivery (when
// delivery_id > 0) and, for a generic payload with a secret, the signature.
std::vector<std::string> PayloadHeaders(std::string_view format, std::string_view event,
                                        int64_t delivery_id, std::string_view secret,
                                        std::string_view body);

// The AlertJSON of the test payload (`POST .../alert-webhooks/{id}/test`): id 0, level INFO,
// a title saying it is a test.
boost::json::object TestAlert(std::string_view entity, std::string_view project, int64_t now_ms);

}  // namespace cohort::server::webhooks
