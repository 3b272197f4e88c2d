// The reason table's look-ups. See reason.hpp.
#include "rules/reason.hpp"

namespace sandgate::rules {

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::allow:
      return "allow";
    case Verdict::deny:
      return "deny";
    case Verdict::error:
      return "error";
  }
  return "error";
}

std::optional<Reason> find_reason(std::string_view code) {
  for (const ReasonInfo& row : kReasons) {
    if (row.code == code) {
      return row.reason;
    }
  }
  return std::nullopt;
}

}  // namespace sandgate::rules
