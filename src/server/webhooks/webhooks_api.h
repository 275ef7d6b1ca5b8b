// Routes of alert webhooks (docs/api.md "Alert webhooks"), admin keys only (a webhook sends a
// project's alerts, and this server's requests, to any URL):
//   GET|POST /api/v1/alert-webhooks/{entity}/{project}
//   GET|PUT|DELETE /api/v1/alert-webhooks/{entity}/{project}/{id}
//   POST .../{id}/test        sends the test payload now; the receiver's status
//   GET  .../{id}/deliveries  the webhook's delivery log, newest first (?limit=, default 100,
//                             max 1000)
//   GET  .../deliveries       the project's, across its webhooks (?alert=: one alert's)
// The secret is write-only: answers carry "has_secret". Bad input: 400 naming the field.
#pragma once

#include "server/api/context.h"
#include "server/webhooks/webhook_dispatcher.h"

namespace cohort::server::webhooks {

// `dispatcher` sends the test payloads; null only for a router whose handlers are never called
// (the route table).
void RegisterWebhookRoutes(http::Router& r, api::ApiContext* ctx, WebhookDispatcher* dispatcher);

}  // namespace cohort::server::webhooks
