// A file's verification result as a record (issue 28): what eventd sends for VERIFY, and what
// `eventctl verify` reads back and prints as it prints an offline verification — one format,
// one place.
//
//   {kind:"verify", file, rows, pre_chain_rows, awaiting_retention_rows, checkpoints, sealed_through,
//    broken: nil | {kind, row, time, what}, unsealed: nil | {kind, row, time, what}}
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "seal/verify_store.hpp"

namespace eventd::seal {

nlohmann::json report_record(const FileReport& report);
// nullopt for a record that is not a verify record eventctl understands.
std::optional<FileReport> report_from_record(const nlohmann::json& record);

}  // namespace eventd::seal
