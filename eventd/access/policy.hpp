// The read-path access policy (PSD-008 §9.1–§9.2 mapped per DESIGN.md §2).
//
//   "Security": { "Events": {
//       "*":            [ { "allow": ["group:adm"] } ],
//       "app.login":    [ { "allow": ["group:auditors"], "fields": ["timestamp", "event_type", "user"] } ],
//       "kacs":         [ { "deny":  ["user:nobody"] }, { "allow": ["everyone"] } ] } }
//
// Pattern resolution (§9.1.5): the exact event type, then each parent obtained by dropping the
// last dot-separated component, then "*"; first pattern present wins. Within the winning
// pattern's entries: any matching deny → no access; else the union of the matching allows'
// fields (an allow without "fields" grants every field). Principals: "uid:N", "user:NAME",
// "gid:N", "group:NAME", "everyone". Fields: header names, "payload" (every payload field), or
// payload paths ("user", "source.name"). Root reads everything, always. No "*" pattern → no
// access for anyone else (fail closed, §9.1.7).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "eventd/access/caller.hpp"
#include "eventd/query/ast.hpp"
#include "kmes/result.hpp"

namespace eventd::access {

// What one caller may see of events of one type.
struct TypeGrant {
    bool visible = false;     // root verdict: the record exists for this caller
    bool all_fields = false;  // every header and payload field
    bool all_payload = false; // "payload" granted
    std::vector<std::string> fields;  // otherwise: granted header names and payload paths
};

class Policy {
public:
    // Parse the `Security` object of eventd's configuration. `security` null (key absent) →
    // the default: {"Events": {"*": [{"allow": ["group:adm"]}]}}. Errors name the pattern, the
    // entry and what is wrong; the daemon then uses deny_all() (fail closed, DESIGN.md §3.6).
    static kmes::Result<std::shared_ptr<const Policy>> parse(const nlohmann::json& security);
    static std::shared_ptr<const Policy> deny_all();

    // Resolve the pattern for `event_type` and evaluate it for `caller`.
    TypeGrant grant(const Caller& caller, std::string_view event_type) const;
    // Is this caller an administrator (eventctl status)? Root, or a principal listed in
    // Security.Admins (default ["group:adm"]).
    bool is_admin(const Caller& caller) const;
    // … (helper-owned internals)
};

// One caller's view for the duration of one query or stream: caches grants per event type
// (§9.2 caching — at most one evaluation per (caller, type)). Not thread-safe; one per query.
class CallerAccess {
public:
    CallerAccess(Caller caller, std::shared_ptr<const Policy> policy);

    const Caller& caller() const { return caller_; }
    // Root: no filtering at all (the planner skips the visibility predicate).
    bool unrestricted() const { return caller_.is_root(); }
    // Root verdict for records of `event_type` (the SQL function eventd_visible calls this).
    bool visible(std::string_view event_type);
    // Remove from `record` (a flat map: header fields and payload fields as top-level keys)
    // every field the caller may not read for its event type. A granted path "source.name"
    // keeps only that member of the map `source`.
    void filter_fields(std::string_view event_type, nlohmann::json& record);
    // §9.2 step 5: every field referenced by WHERE, SORT, GROUP (incl. its aggregated field),
    // COUNT BY, TOP N BY or DISTINCT must be readable under every pattern that can contribute
    // records to this query (patterns whose scope can overlap the type pattern and that make
    // records visible to the caller). Otherwise EACCES with a message naming the field, e.g.
    // "access denied: you may not filter, sort or aggregate on field 'user' of events 'app.*'".
    kmes::Status check_query(const query::Query& q) const;
    // The policy changed (SIGHUP): drop the cache and use `policy` from now on.
    void reset(std::shared_ptr<const Policy> policy);
    const std::shared_ptr<const Policy>& policy() const { return policy_; }

private:
    Caller caller_;
    std::shared_ptr<const Policy> policy_;
    std::unordered_map<std::string, TypeGrant> cache_;
};

// The policy in force, swapped on reload; readers take a snapshot per query/batch.
class PolicyHolder {
public:
    explicit PolicyHolder(std::shared_ptr<const Policy> initial) : policy_(std::move(initial)) {}
    std::shared_ptr<const Policy> get() const {
        std::lock_guard lock(mutex_);
        return policy_;
    }
    void set(std::shared_ptr<const Policy> p) {
        std::lock_guard lock(mutex_);
        policy_ = std::move(p);
    }

private:
    mutable std::mutex mutex_;
    std::shared_ptr<const Policy> policy_;
};

}  // namespace eventd::access
