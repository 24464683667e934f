// The read-path access policy (PSD-008 §9.1–§9.2 mapped per DESIGN.md §2).
//
//   "Security": { "Events": {
//       "*":            [ { "allow": ["group:adm"] } ],
//       "app.login":    [ { "allow": ["group:auditors"], "fields": ["timestamp", "event_type", "user"] } ],
//       "kacs":         [ { "deny":  ["user:nobody"] }, { "allow": ["everyone"] } ] } }
//
// Pattern resolution (§9.1.5): the exact event type, then each parent obtained by dropping the
// last dot-separated component, then "*"; first pattern present wins (ASCII case ignored, as
// in the query's type pattern). Within the winning
// pattern's entries: any matching deny → no access; else the union of the matching allows'
// fields (an allow without "fields" grants every field). Principals: "uid:N", "user:NAME",
// "gid:N", "group:NAME", "everyone", and "self": the caller is the record's subject (its
// effective or true token GUID is the caller's token, base/identity_guid.hpp), so one type's
// records can be visible row by row. Fields: header names, "payload" (every payload field), or
// payload paths ("user", "source.name"). Root reads everything, always. No "*" pattern → types no
// pattern covers are invisible to everyone else (fail closed, §9.1.7). docs/ACCESS-CONTROL.md.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "eventd/access/caller.hpp"
#include "eventd/query_language/ast.hpp"
#include "base/result.hpp"

namespace eventd::access {

// What one caller may see of events of one type.
struct TypeGrant {
    bool visible = false;             // root verdict: the record exists for this caller
    bool all_fields = false;          // every header and payload field
    bool all_payload = false;         // "payload" granted
    std::vector<std::string> fields;  // otherwise: granted header names and payload paths
};

class Policy {
public:
    // One principal of an entry, names already resolved to ids (at parse time).
    struct Principal {
        enum class Kind { uid, gid, everyone, self } kind = Kind::everyone;
        uint32_t id = 0;  // uid or gid
        // `own_record`: the record being judged is the caller's own (only `self` asks).
        bool matches(const Caller& caller, bool own_record) const;
    };
    // One entry of a pattern's list. `fields` only on allow entries; nullopt = every field.
    struct Entry {
        bool deny = false;
        std::vector<Principal> principals;
        std::optional<std::vector<std::string>> fields;
    };

    // An empty policy: no pattern, no admin — nobody but root reads anything (= deny_all()).
    Policy() = default;

    // Parse the `Security` object of eventd's configuration. `security` null (key absent) →
    // the default: {"Events": {"*": [{"allow": ["group:adm"]}]}, "Admins": ["group:adm"]}.
    // Inside a present object, an absent/null "Events" or "Admins" takes its default part.
    // Errors name the pattern, the entry and what is wrong; the daemon then uses refused()
    // (fail closed, DESIGN.md §3.6). A user/group name that does not resolve (unknown, or its
    // lookup failed) is not an error: in an allow entry or Security.Admins the principal is
    // dropped, in a deny entry it becomes `everyone` — either way access never widens — and a
    // warning is kept in warnings() (a deny entry so changed also in failing_closed()).
    static base::Result<std::shared_ptr<const Policy>> parse(const nlohmann::json& security);
    static std::shared_ptr<const Policy> deny_all();
    // deny_all() in place of a configuration parse() refused, remembering why (STATUS shows
    // it: nobody but root reads anything until the policy is fixed).
    static std::shared_ptr<const Policy> refused(std::string problem);

    // Resolve the pattern for `event_type` and evaluate it for `caller`, for records of other
    // subjects (`own_record` false) or for the caller's own records (true; differs only when
    // the pattern's entries name `self`).
    TypeGrant grant(const Caller& caller, std::string_view event_type, bool own_record) const;
    // Is this caller an administrator (eventctl status)? Root, or a principal listed in
    // Security.Admins (default ["group:adm"]).
    bool is_admin(const Caller& caller) const;

    // Things the daemon should log after parse(): unknown names, a missing "*", ….
    const std::vector<std::string>& warnings() const { return warnings_; }
    // Why the configured policy was refused (this is then refused()'s deny-all), or nullopt.
    const std::optional<std::string>& problem() const { return problem_; }
    // The deny entries that deny everyone because a name in them did not resolve (issue 39),
    // each as "Security.Events pattern 'kacs', entry 1 (user:late)"; empty when none.
    const std::vector<std::string>& failing_closed() const { return failing_closed_; }
    // When parse() or refused() made this policy (wall clock, ns; 0 for deny_all()): names
    // resolve at that moment, so a user created later is seen from the next reload.
    uint64_t loaded_ns() const { return loaded_ns_; }
    // §9.1.5: the pattern governing `event_type` (exact, then parents, then "*"; compared
    // ignoring ASCII case like the query's type pattern), nullopt when none does.
    std::optional<std::string> resolve(std::string_view event_type) const;
    // Every pattern of the policy (lower case; "*" included when present), sorted.
    std::vector<std::string> patterns() const;
    // Evaluate one pattern's entries for `caller`, without resolution. Root: everything;
    // a pattern the policy does not have: nothing.
    TypeGrant grant_pattern(const Caller& caller, std::string_view pattern, bool own_record) const;
    // Does some entry name `self`? When not, a record's subject never changes a verdict and
    // readers need not look at it.
    bool uses_self() const { return uses_self_; }

private:
    friend class PolicyParser;
    std::map<std::string, std::vector<Entry>, std::less<>> events_;  // pattern → entries
    std::vector<Principal> admins_;
    std::vector<std::string> warnings_;
    std::vector<std::string> failing_closed_;
    std::optional<std::string> problem_;
    uint64_t loaded_ns_ = 0;
    bool uses_self_ = false;
};

// A list of principals in the Security.Admins syntax ("uid:N", "user:NAME", "gid:N",
// "group:NAME", "everyone"), names resolved now. A name that does not resolve (unknown, or its
// lookup failed) drops its principal and adds a warning; anything else malformed is an error whose message starts with `where`. Shared by
// Security.Admins and eventd-meta.db's admin_sd (eventd/index/admin_sd.hpp).
base::Result<std::vector<Policy::Principal>> parse_principals(const nlohmann::json& list, const std::string& where,
                                                              std::vector<std::string>& warnings);

// One caller's view for the duration of one query or stream: caches grants per event type
// (§9.2 caching — at most one evaluation per (caller, type)). Not thread-safe; one per query.
class CallerAccess {
public:
    CallerAccess(Caller caller, std::shared_ptr<const Policy> policy);

    const Caller& caller() const { return caller_; }
    // Which records of a type exist for this caller: none, only those whose subject is the
    // caller (`self` in the policy), or all.
    enum class Visibility { none, own_records, all };
    size_t cached_types() const { return cache_.size(); }  // for tests: the cache stays bounded
    // Root: no filtering at all, of records or of fields.
    bool unrestricted() const { return caller_.is_root(); }
    // Must a read check each row's visibility (ReadPlan::visible_only)? Not for root, nor for a
    // caller to whom every pattern of the policy, "*" included, makes records visible (an
    // administrator under the default policy): every record exists for them, and their
    // predicates may then use any index. Fields are still filtered per type.
    bool filters_rows() const { return !unrestricted() && !sees_every_record_; }
    Visibility visibility(std::string_view event_type);
    // Is the record with these subject tokens (16 bytes each, or empty) the caller's own: its
    // effective or true token is the caller's token? Always false when the policy names no
    // `self` (nothing depends on it then, and nothing is compared).
    bool owns(std::span<const uint8_t> effective_token, std::span<const uint8_t> true_token) const;
    // Root verdict for one record (the SQL function eventd_visible calls this).
    bool visible(std::string_view event_type, std::span<const uint8_t> effective_token,
                 std::span<const uint8_t> true_token);
    // Remove from `record` (a flat map: header fields and payload fields as top-level keys)
    // every field the caller may not read for its event type, `own_record` telling whose record
    // it is (owns()). A granted path "source.name" keeps only that member of the map `source`.
    void filter_fields(std::string_view event_type, bool own_record, nlohmann::json& record);
    // True when filter_fields would leave a visible record of `event_type` whole (root, or a
    // grant without a field list): the record can then be encoded without a tree.
    bool reads_all_fields(std::string_view event_type, bool own_record);
    // §9.2 step 5, extended to filters (issue 4: no inference through filters): every field
    // referenced by WHERE, SINCE/UNTIL (timestamp), SORT (not an aggregate's output key such
    // as count), GROUP (incl. its aggregated field), COUNT BY, TOP N BY or DISTINCT must be
    // readable under every pattern that can contribute records to this query: patterns that
    // make records visible to the caller and whose scope can overlap the type pattern (an
    // exact type: the one pattern governing it; a glob: conservatively, every pattern not
    // provably disjoint). Otherwise EACCES naming field, clause and pattern:
    // "access denied: field 'user' cannot be used in WHERE for events of pattern 'app'".
    // Root and STATUS queries: always ok (STATUS is authorised by is_admin()).
    base::Status check_query(const query::Query& q) const;
    // Can any record of `q`'s type pattern be visible to this caller (root; else some policy
    // pattern that can contribute records to it makes them visible)? Adaptive indexing counts
    // only such queries (issue 23 item 3).
    bool may_read_any(const query::Query& q) const;
    // The policy changed (SIGHUP): drop the cache and use `policy` from now on.
    void reset(std::shared_ptr<const Policy> policy);
    const std::shared_ptr<const Policy>& policy() const { return policy_; }

private:
    // Granted payload paths as a tree: "source.name" → source{name}; `whole` keeps the value.
    struct PathNode {
        std::string name;
        bool whole = false;
        std::vector<PathNode> children;
    };
    struct GrantView {
        TypeGrant grant;
        std::vector<std::string> headers;  // granted header names (when !all_fields)
        PathNode payload;                  // granted payload paths (when !all_fields, !all_payload)
    };
    // Both verdicts of one type: for other subjects' records and for the caller's own (the
    // same unless the policy names `self`).
    struct CachedGrant {
        GrantView others;
        GrantView own;
        const GrantView& of(bool own_record) const { return own_record ? own : others; }
    };
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };

    const CachedGrant& cached(std::string_view event_type);
    static GrantView view_of(TypeGrant grant);
    static void filter_payload(const PathNode& node, nlohmann::json& object);

    static bool sees_every_record(const Policy& policy, const Caller& caller);

    Caller caller_;
    std::shared_ptr<const Policy> policy_;
    bool sees_every_record_ = false;  // of policy_, for caller_
    std::array<uint8_t, 16> token_;   // the caller's token GUID (base/identity_guid.hpp)
    static constexpr size_t kMaxCachedTypes = 4096;
    std::unordered_map<std::string, CachedGrant, StringHash, std::equal_to<>> cache_;
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
