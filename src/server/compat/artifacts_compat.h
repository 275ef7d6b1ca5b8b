// Artifacts of the vendor's clients (docs/compat.md, "Artifacts"): what `run.log_artifact`,
// `artifact.wait()` and `run.use_artifact(...)` send, stored as Cohort artifacts
// (docs/artifacts.md) that the UI, the API and Cohort's SDK see like their own.
//
// Logging: createArtifact makes a draft (store ArtifactDraft), or answers COMMITTED when the
// collection's latest version has the client's digest; createArtifactFiles hands out a signed
// upload URL per file whose MD5 the entity does not hold yet (and per part, for the multipart
// upload of a file of 2 GiB or more, which completeMultipartUploadArtifact assembles); each PUT
// is streamed into the blob store, checked against its MD5 (artifact_uploads.h);
// createArtifactManifest's URL takes the manifest;
// commitArtifact reads the manifest, maps each entry to its blob by MD5 and commits the version.
// A file or manifest that never arrived fails the commit with an error naming it: nothing is
// committed, and the client's artifact.wait() raises it.
//
// Threading: resolvers live for one request; the routes are thread-safe.
#pragma once

#include <string>

#include "server/compat/graphql_exec.h"
#include "server/compat/resolvers.h"

namespace cohort::compat {

// Whether `name` is a Mutation field this file resolves, and resolves it.
bool IsArtifactMutation(const std::string& name);
Result<gql::Resolved> ResolveArtifactMutation(GqlContext* c, const gql::FieldInfo& f);

// Query.artifact(id) and Project.artifact(name) / artifactType(name) /
// artifactCollectionMembership(name) / artifactCollection(name).
Result<gql::Resolved> ResolveArtifactById(GqlContext* c, const gql::FieldInfo& f);
Result<gql::Resolved> ResolveProjectArtifactField(GqlContext* c, const store::RunRef& project,
                                                  const gql::FieldInfo& f);
bool IsProjectArtifactField(const std::string& name);

// Whether `head` is a PUT to a signed artifact upload URL with a valid signature (the body
// gate of server_app.cc); kUnauthenticated naming the problem otherwise; kNotFound when the
// path is not an artifact upload path.
Status CheckSignedArtifactUpload(api::ApiContext* ctx, const http::HttpRequest& head);

void RegisterArtifactCompatRoutes(http::Router& r, api::ApiContext* ctx);

}  // namespace cohort::compat
