#pragma once
// Table printers of the built-in kinds (private to minicluster/): the column definitions and
// cell values of upstream pkg/printers/internalversion, always generated "wide" as the API
// server does, so priority-1 columns carry cells too.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "minicluster/table_format.h"

namespace strait::minicluster::table {

// The cells of one row; may set `rowConditions` (the row's conditions, e.g. Completed).
using CellsFn = std::function<nlohmann::json(const nlohmann::json& obj, long long now,
                                             nlohmann::json& rowConditions)>;

struct Printer {
  std::vector<Column> columns;
  CellsFn cells;
};

// Printers by group-qualified resource ("pods", "deployments.apps"). Built once; immutable.
const std::map<std::string, Printer>& builtinPrinters();

}  // namespace strait::minicluster::table
