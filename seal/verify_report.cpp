#include "seal/verify_report.hpp"

namespace eventd::seal {
namespace {

using nlohmann::json;

json finding_record(const std::optional<Finding>& f) {
    if (!f) return nullptr;
    return {{"kind", kind_name(f->kind)}, {"row", f->row}, {"time", f->time_ns}, {"what", f->what}};
}

std::optional<Finding> finding_from(const json& j, const std::string& file) {
    if (!j.is_object()) return std::nullopt;
    Finding f{FindingKind::unreadable, file, 0, 0, ""};
    const auto kind = kind_named(j.value("kind", ""));
    if (kind) f.kind = *kind;
    f.row = j.value("row", int64_t(0));
    f.time_ns = j.value("time", uint64_t(0));
    f.what = j.value("what", std::string());
    return f;
}

}  // namespace

json report_record(const FileReport& r) {
    return {{"kind", "verify"},
            {"file", r.file},
            {"rows", r.rows},
            {"pre_chain_rows", r.pre_chain_rows},
            {"awaiting_retention_rows", r.awaiting_retention_rows},
            {"checkpoints", r.checkpoints},
            {"sealed_through", r.sealed_through},
            {"broken", finding_record(r.broken)},
            {"unsealed", finding_record(r.unsealed)}};
}

std::optional<FileReport> report_from_record(const json& j) {
    if (!j.is_object() || j.value("kind", "") != "verify" || !j.contains("file")) return std::nullopt;
    FileReport r;
    r.file = j.value("file", std::string());
    r.rows = j.value("rows", uint64_t(0));
    r.pre_chain_rows = j.value("pre_chain_rows", uint64_t(0));
    r.awaiting_retention_rows = j.value("awaiting_retention_rows", uint64_t(0));
    r.checkpoints = j.value("checkpoints", uint64_t(0));
    r.sealed_through = j.value("sealed_through", int64_t(0));
    if (j.contains("broken")) r.broken = finding_from(j["broken"], r.file);
    if (j.contains("unsealed")) r.unsealed = finding_from(j["unsealed"], r.file);
    return r;
}

}  // namespace eventd::seal
